//! `textDocument/codeAction` on documents and notebook cells, and `codeAction/resolve` of fix-all.

use super::*;

impl Server {
    pub(super) async fn notebook_code_actions(
        &self,
        analysis: Arc<NotebookAnalysis>,
        cell: Uri,
        range: Range,
        only: Option<Vec<CodeActionKind>>,
    ) -> Result<Option<CodeActionResponse>> {
        let encoding = self.session.encoding();
        let Some(view) = analysis.cell(&cell).and_then(|cell| cell.view.clone()) else {
            return Ok(Some(Vec::new()));
        };
        let set_backend = backend_action::for_range(
            &self.session,
            &cell,
            &view,
            analysis.settings.as_ref(),
            from_proto::text_range(&view.text, &view.line_index, range, encoding),
            only.as_deref(),
        );
        // "Fix all" runs the fix loop over the whole notebook: keep it off the message loop.
        let mut actions = tokio::task::spawn_blocking(move || {
            handlers::cell_code_actions(&analysis, &cell, range, only.as_deref(), encoding)
        })
        .await
        .map_err(|error| internal_error(format!("code actions crashed: {error}")))?;
        actions.extend(set_backend);
        Ok(Some(actions))
    }

    pub(super) async fn on_code_action(
        &self,
        params: CodeActionParams,
    ) -> Result<Option<CodeActionResponse>> {
        let token = CancellationToken::default();
        let guard = token.drop_guard();
        let uri = params.text_document.uri;
        let target = self.request_target(&uri, &token).await?;
        guard.disarm();
        let analysis = match target {
            None => return Ok(None),
            Some(Target::Cell(analysis)) => {
                return self
                    .notebook_code_actions(analysis, uri, params.range, params.context.only)
                    .await;
            }
            Some(Target::Text(analysis)) => analysis,
        };
        let negotiated = self.session.negotiated();
        let only = params.context.only.as_deref();
        let resolve = negotiated.code_action_resolve;
        let encoding = negotiated.encoding;
        let set_backend = backend_action::for_range(
            &self.session,
            &uri,
            &analysis,
            analysis.settings.as_ref(),
            from_proto::text_range(&analysis.text, &analysis.line_index, params.range, encoding),
            only,
        );
        // Building a non-lazy "Fix all" runs the fix loop: keep it off the message loop.
        let mut actions = tokio::task::spawn_blocking({
            let only = only.map(<[CodeActionKind]>::to_vec);
            let range = params.range;
            move || {
                handlers::text_code_actions(
                    &uri,
                    &analysis,
                    range,
                    only.as_deref(),
                    encoding,
                    resolve,
                )
            }
        })
        .await
        .map_err(|error| internal_error(format!("code actions crashed: {error}")))?;
        actions.extend(set_backend);
        Ok(Some(actions))
    }

    pub(super) async fn on_code_action_resolve(
        &self,
        mut action: CodeAction,
    ) -> Result<CodeAction> {
        let Some(data) = handlers::resolve_data(&action) else {
            return Ok(action);
        };
        let token = CancellationToken::default();
        let guard = token.drop_guard();
        // Only a text document's "Fix all" is resolved lazily (a cell's needs the notebook).
        let Some(Target::Text(analysis)) = self.request_target(&data.uri, &token).await? else {
            return Err(Error::invalid_params("the document is no longer open"));
        };
        let encoding = self.session.encoding();
        // Building the edit runs the fix loop: keep it off the message loop.
        let edit = tokio::task::spawn_blocking(move || {
            handlers::resolve_fix_all(&data, &analysis, encoding)
        })
        .await
        .map_err(|error| internal_error(format!("fixing crashed: {error}")))?;
        guard.disarm();
        action.edit = Some(edit.map_err(rpc_error)?);
        Ok(action)
    }
}
