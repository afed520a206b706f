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
    assert titles == ['tpulint (TPU401): Replace with `"xla"`', "tpulint (TPU401): Disable for this line"]
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


NOTEBOOK = (pathlib.Path(__file__).parent / "ws" / "train.ipynb").resolve().as_uri()
CELLS = [  # (uri, kind, language, text): cell 3's findings depend on cell 1's import
    (NOTEBOOK.replace("file:", "vscode-notebook-cell:") + "#C1", types.NotebookCellKind.Code,
     "python", "import torch\nimport torch_xla\n!pip install -q torch_xla\n"),
    (NOTEBOOK.replace("file:", "vscode-notebook-cell:") + "#C2", types.NotebookCellKind.Markup,
     "markdown", "# Training\n"),
    (NOTEBOOK.replace("file:", "vscode-notebook-cell:") + "#C3", types.NotebookCellKind.Code,
     "python", "%matplotlib inline\nmodel = torch.compile(model)\n"),
]


async def test_notebook_cells_are_checked_as_one_module(client: LanguageClient):
    client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(
            uri=NOTEBOOK, notebook_type="jupyter-notebook", version=1,
            cells=[types.NotebookCell(kind=kind, document=uri) for uri, kind, _, _ in CELLS]),
        cell_text_documents=[types.TextDocumentItem(uri=uri, language_id=language, version=1, text=text)
                             for uri, _, language, text in CELLS]))
    model_cell = CELLS[2][0]
    if client.pull:
        reports = [await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri=uri))) for uri, _, _, _ in CELLS]
        per_cell = [report.items for report in reports]
    else:
        while any(uri not in client.diagnostics for uri, _, _, _ in CELLS):
            await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        per_cell = [client.diagnostics[uri] for uri, _, _, _ in CELLS]
    assert len(per_cell[0]) == 0 and len(per_cell[1]) == 0
    # TPU603 exists only because cell 1 imports torch_xla; its line is local to cell 3.
    assert [(d.range.start.line, d.range.start.character, d.code) for d in per_cell[2]] == [
        (1, 8, "TPU603")]

    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=model_cell), range=per_cell[2][0].range,
        context=types.CodeActionContext(diagnostics=per_cell[2], only=[types.CodeActionKind.QuickFix])))
    assert "tpulint (TPU603): Disable for this line" in [a.title for a in actions]
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=model_cell), position=per_cell[2][0].range.start))
    assert "TPU603" in hover.contents.value
    client.notebook_document_did_close(types.DidCloseNotebookDocumentParams(
        notebook_document=types.NotebookDocumentIdentifier(uri=NOTEBOOK),
        cell_text_documents=[types.TextDocumentIdentifier(uri=uri) for uri, _, _, _ in CELLS]))
