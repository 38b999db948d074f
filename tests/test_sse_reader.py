"""The page's one reader of server-sent events (the ES module web/static/js/sse.js), run in the
pinned Node on bodies cut at awkward places: frames split across chunks, CRLF and CR line ends,
comments (keep-alives), multi-line data, events with and without a name."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.support.nodetools import node_binary

SSE_JS = Path(__file__).resolve().parent.parent / "web" / "static" / "js" / "sse.js"

RUN = """
const { pathToFileURL } = require("node:url");
const chunks = JSON.parse(process.argv[2]);
const encoder = new TextEncoder();
const response = {
  body: {
    getReader() {
      let i = 0;
      return {
        async read() {
          if (i >= chunks.length) return { done: true };
          return { value: encoder.encode(chunks[i++]), done: false };
        },
      };
    },
  },
};
(async () => {
  const { frames } = await import(pathToFileURL(process.argv[1]).href);
  const out = [];
  for await (const frame of frames(response)) out.push(frame);
  console.log(JSON.stringify(out));
})();
"""


def frames(*chunks: str) -> list[dict[str, str]]:
    run = subprocess.run(
        [str(node_binary()), "-e", RUN, str(SSE_JS), json.dumps(chunks)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return json.loads(run.stdout)


def test_frames_split_across_chunks_are_read_whole() -> None:
    body = 'data: {"type": "text", "text": "hi"}\n\nevent: approval\ndata: {"a": 1}\n\n'
    cut = [body[:7], body[7:40], body[40:41], body[41:]]
    assert frames(*cut) == [
        {"event": "message", "data": '{"type": "text", "text": "hi"}'},
        {"event": "approval", "data": '{"a": 1}'},
    ]


def test_line_ends_comments_and_multi_line_data() -> None:
    body = (
        ": keep-alive\r\n\r\n"
        'event: elicitation\r\ndata: {\r\ndata:  "x": 2}\r\n\r\n'
        "event:message\rdata:3\r\r"
        "data: unfinished"
    )
    assert frames(body) == [
        {"event": "elicitation", "data": '{\n "x": 2}'},
        {"event": "message", "data": "3"},
    ]
