//! `textDocument/hover`: the documentation of the rules (and runtime codes) with a finding there.

use super::*;

impl Server {
    pub(super) async fn on_hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        let token = CancellationToken::default();
        let _guard = token.drop_guard();
        let position = params.text_document_position_params;
        let uri = &position.text_document.uri;
        let encoding = self.session.encoding();
        Ok(match self.request_target(uri, &token).await? {
            None => None,
            Some(Target::Cell(analysis)) => handlers::cell_hover(
                &analysis,
                uri,
                position.position,
                encoding,
                &actions::builtin_docs,
            ),
            Some(Target::Text(analysis)) => {
                let (offset, hover) = handlers::text_hover(
                    &analysis,
                    position.position,
                    encoding,
                    &actions::builtin_docs,
                );
                crate::runtime::with_runtime_hover(hover, &analysis, uri, offset, encoding)
            }
        })
    }
}
