"""A small store for the web page's tests (and its screenshots): notes with headings, facts
with people, times and metadata, and two conversations with extracted facts, in English and
Chinese; plus `engram serve` started in a process of its own, as a user runs it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from engramdb import Memory

NOTES = {
    "projects/atlas.md": """# Project Atlas

## Goals
Ship the offline search engine by June 2024. Search must work without a network and explain every hit.

## Team
Alice leads the retrieval work; Bob owns the evaluation harness and the nightly benchmark runs.
""",
    "生活/旅行.md": """# 旅行计划

## 五月
王伟五月去杭州看西湖，住在湖边的民宿。

## 预算
项目代号是 XYZ，旅行预算五千元。
""",
}

FACTS = [
    {"text": "Alice moved to Lisbon in May 2023.", "persons": ["Alice"], "entities": ["Lisbon"],
     "timestamp": "2023-05-02T09:00:00", "metadata": {"source": "chat", "confidence": 0.9}},
    {"text": "Bob prefers green tea over coffee.", "persons": ["Bob"], "timestamp": "2023-06-11T08:30:00"},
    {"text": "The team offsite is booked for 12 April 2024 in Porto.", "entities": ["Porto"],
     "timestamp": "2024-02-20T16:00:00"},
    {"text": "王伟喜欢喝龙井茶。", "persons": ["王伟"], "timestamp": "2023-09-03T10:00:00"},
    {"text": "Markup stays text: <b>bold</b> & <img src=x onerror=alert(1)>", "timestamp": "2023-07-01T12:00:00"},
] + [{"text": f"Reading log: Alice finished book {n} of her {title} series.", "persons": ["Alice"],
      "timestamp": f"2023-{n + 1:02d}-15T20:00:00", "metadata": {"shelf": "fiction"}}
     for n, title in enumerate(["Earthsea", "Foundation", "Dune", "Hainish", "Culture", "Expanse", "Murderbot",
                                "Broken Earth"], start=1)]

TRIP = [("Alice", "I flew to Oslo yesterday for the jazz festival."),
        ("Bob", "Nice! How was the concert?"),
        ("Alice", "Amazing. I met Carol there, she plays the saxophone."),
        ("Bob", "Are you going back next year?"),
        ("Alice", "Yes, I already booked a hotel for March 2025.")]
MEETING = [("王伟", "我下周要去上海出差，见客户。"), ("李娜", "记得带上项目资料。"), ("王伟", "好的，我周五回来。")]


def build_store(db: Path, notes_dir: Path) -> None:
    for name, text in NOTES.items():
        path = notes_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    with Memory(db, namespace="alice", embedder="minilm") as memory:
        memory.import_path(notes_dir)
        memory.add(FACTS)
        memory.add_conversation(TRIP, session_id="trip-2024-03", session_time="2024-03-14T10:00:00")
        memory.add_conversation(MEETING, session_id="会议-0320", session_time="2024-03-20T09:30:00")
        memory.add(["Bob keeps his own notes."], namespace="bob")
        memory.add(["小王的笔记：黄山山顶晚上很冷。"], namespace="中文")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Served:
    """`engram --db DB serve [ARGS]` on a free loopback port, until `stop()`."""

    def __init__(self, db: Path, *args: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "ENGRAM_EMBEDDER": "minilm"}
        self.log = open(db.with_suffix(".serve.log"), "w+", encoding="utf-8")
        self.process = subprocess.Popen([sys.executable, "-m", "engramdb.cli", "--db", str(db), "serve", "--port",
                                         str(self.port), *args], env=env, stdout=self.log, stderr=subprocess.STDOUT)
        while True:  # until it answers, or the process ends
            if self.process.poll() is not None:
                raise RuntimeError(f"engram serve exited: {self.output()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)

    def output(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()
