"""`tpulint server` driven by pytest-lsp with the capabilities real clients send.

The server command comes from $TPULINT_SERVER (default: `tpulint server` on PATH). Each test runs
once per captured client profile (VS Code, Neovim, Emacs), so capability negotiation (position
encoding, push vs pull diagnostics, code-action resolve) is exercised as those clients do it.
"""
import os
import pathlib
import shlex

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

SERVER = shlex.split(os.environ.get("TPULINT_SERVER", "tpulint server"))
SRC = 'import torch\nimport torch_xla\n\ndevice = torch.device("cuda")\n\n\ndef train_step(model, batch):\n    loss = model(batch).mean()\n    return loss.item()\n'
URI = (pathlib.Path(__file__).parent / "ws" / "train.py").resolve().as_uri()


@pytest_lsp.fixture(
    params=["visual-studio-code", "neovim", "emacs"],
    config=ClientServerConfig(server_command=SERVER),
)
async def client(request, lsp_client: LanguageClient):
    # Editors accept the server's dynamic registration of configuration-file watchers.
    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register_capability(params: types.RegistrationParams):
        return None

    result = await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities(request.param),
            initialization_options={"settings": {"unsafeFixes": True}},
        )
    )
    lsp_client.pull = result.capabilities.diagnostic_provider is not None
    yield
    await lsp_client.shutdown_session()


async def diagnostics(client: LanguageClient):
    """The document's diagnostics, pulled or pushed as the client negotiated."""
    if client.pull:
        report = await client.text_document_diagnostic_async(
            types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=URI))
        )
        return report.items
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return client.diagnostics[URI]


async def test_diagnostics_quick_fix_noqa_and_hover(client: LanguageClient):
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=URI, language_id="python", version=1, text=SRC)))
    diags = await diagnostics(client)
    assert [(d.range.start.line, d.code, d.source) for d in diags] == [
        (3, "TPU401", "tpulint"), (8, "TPU101", "tpulint")]
    assert diags[0].code_description.href.endswith("/TPU401.md")

    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=URI), range=diags[0].range,
        context=types.CodeActionContext(diagnostics=[diags[0]], only=[types.CodeActionKind.QuickFix])))
    titles = [a.title for a in actions]
    assert titles == ['Replace with `"xla"`', "Disable TPU401 for this line"]
    (noqa_edit,) = actions[1].edit.changes[URI]
    assert noqa_edit.new_text == "  # noqa: TPU401"

    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=URI), position=diags[1].range.start))
    assert "TPU101" in hover.contents.value


async def test_fix_all_source_action(client: LanguageClient):
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=URI, language_id="python", version=1, text=SRC)))
    await diagnostics(client)
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=URI),
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
        context=types.CodeActionContext(diagnostics=[], only=[types.CodeActionKind.SourceFixAll])))
    (action,) = actions
    if action.edit is None:
        action = await client.code_action_resolve_async(action)
    (edit,) = action.edit.changes[URI]
    lines = SRC.split("\n")
    line = lines[edit.range.start.line]
    fixed = line[: edit.range.start.character] + edit.new_text + line[edit.range.end.character:]
    assert fixed == 'device = torch.device("xla")'
