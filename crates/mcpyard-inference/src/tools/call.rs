//! What a tool call has besides its arguments.

use mcpyard_gateway::CallContext;

use crate::progress::Reporter;

/// What a call has besides its arguments: the gateway's context, and the
/// call's progress reporter (shared by everything the call does, so its
/// values keep growing).
#[derive(Debug)]
pub(crate) struct Call {
    pub(crate) ctx: CallContext,
    pub(crate) progress: Reporter,
}

impl Call {
    pub(crate) fn new(ctx: CallContext) -> Self {
        let progress = Reporter::new(ctx.progress.clone());
        Self { ctx, progress }
    }
}
