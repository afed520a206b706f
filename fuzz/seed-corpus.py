#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora under fuzz/corpus/<target>/ from the rule fixtures (and,
when given, directories of real Python sources): check_and_fix gets each source behind a
selector byte (backend, fix threshold), notebook gets fixtures split into cells at blank
lines, lsp_frames gets JSON-RPC sessions that open, edit, act on and close a fixture."""
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fuzz" / "corpus"


def sources(extra_dirs):
    files = sorted((ROOT / "tests" / "fixtures").rglob("*.py"))
    for directory in extra_dirs:
        files += sorted(
            p for p in pathlib.Path(directory).rglob("*.py") if p.stat().st_size < 16_000
        )[:400]
    return [p.read_bytes() for p in files]


def notebook(text):
    """An nbformat 4 notebook whose code cells are the source's paragraphs, with a markdown cell
    and an IPython magic."""
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# fuzz\n"]}]
    cells.append({"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": ["%matplotlib inline\n", "!pip list\n"]})
    for paragraph in text.split("\n\n"):
        lines = [line + "\n" for line in paragraph.split("\n")]
        cells.append({"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": lines})
    document = {"cells": cells, "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(document, indent=1).encode()


def frame(message):
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def session(text, version=1):
    uri = "file:///fuzz/train.py"
    return b"".join(
        frame(m)
        for m in [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}},
            {"jsonrpc": "2.0", "method": "initialized", "params": {}},
            {
                "jsonrpc": "2.0",
                "method": "textDocument/didOpen",
                "params": {
                    "textDocument": {"uri": uri, "languageId": "python", "version": version, "text": text}
                },
            },
            {
                "jsonrpc": "2.0",
                "method": "textDocument/didChange",
                "params": {
                    "textDocument": {"uri": uri, "version": version + 1},
                    "contentChanges": [
                        {"range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 3}}, "text": "x = 1\n"}
                    ],
                },
            },
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "textDocument/codeAction",
                "params": {
                    "textDocument": {"uri": uri},
                    "range": {"start": {"line": 0, "character": 0}, "end": {"line": 9, "character": 0}},
                    "context": {"diagnostics": []},
                },
            },
            {"jsonrpc": "2.0", "id": 3, "method": "textDocument/hover", "params": {"textDocument": {"uri": uri}, "position": {"line": 2, "character": 4}}},
            {"jsonrpc": "2.0", "method": "textDocument/didClose", "params": {"textDocument": {"uri": uri}}},
            {"jsonrpc": "2.0", "id": 4, "method": "shutdown"},
            {"jsonrpc": "2.0", "method": "exit"},
        ]
    )


def main():
    texts = sources(sys.argv[1:])
    for target in ["check_and_fix", "notebook", "lsp_frames", "lsp_edits"]:
        (CORPUS / target).mkdir(parents=True, exist_ok=True)
    for index, text in enumerate(texts):
        for selector in (0, 1, 2, 0x81):
            (CORPUS / "check_and_fix" / f"seed-{index}-{selector}").write_bytes(bytes([selector]) + text)
        (CORPUS / "notebook" / f"seed-{index}").write_bytes(text.replace(b"\n\n", b"\n\0"))
        if index % 4 == 0:
            (CORPUS / "notebook" / f"seed-{index}.ipynb").write_bytes(notebook(text.decode("utf-8", "replace")))
        if index % 8 == 0:
            (CORPUS / "lsp_frames" / f"seed-{index}").write_bytes(session(text.decode("utf-8", "replace")))
    for index in range(16):
        (CORPUS / "lsp_edits" / f"seed-{index}").write_bytes(bytes((index * 37 + k * 11) % 256 for k in range(64)))
    print(f"seeded {len(texts)} sources into {CORPUS}")


if __name__ == "__main__":
    main()
