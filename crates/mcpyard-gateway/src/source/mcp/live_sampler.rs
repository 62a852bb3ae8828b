//! The sampler that answers upstreams' sampling requests with a local
//! model, replaceable while the upstreams run: a reload that changes the
//! local models' settings puts the new source in place for every upstream
//! at once, running ones included.

use std::sync::Arc;

use async_trait::async_trait;
use mcpyard_proto::{ErrorObject, RequestId};
use serde_json::Value;

use crate::{Live, Sampler, SamplingRequest, SamplingUsage};

/// A [`Sampler`] that hands each request to the sampler in place now.
pub(crate) struct LiveSampler(Live<Arc<dyn Sampler>>);

impl std::fmt::Debug for LiveSampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LiveSampler")
    }
}

impl LiveSampler {
    pub(crate) fn new(sampler: Arc<dyn Sampler>) -> Self {
        Self(Live::new(sampler))
    }

    /// Requests from now on go to `sampler`; those under way finish with
    /// the one they started with.
    pub(crate) fn replace(&self, sampler: Arc<dyn Sampler>) {
        self.0.set(sampler);
    }

    fn current(&self) -> Arc<dyn Sampler> {
        self.0.get()
    }
}

#[async_trait]
impl Sampler for LiveSampler {
    async fn create_message(
        &self,
        request: SamplingRequest,
        related: Option<RequestId>,
    ) -> Result<Value, ErrorObject> {
        self.current().create_message(request, related).await
    }

    async fn create_message_measured(
        &self,
        request: SamplingRequest,
        related: Option<RequestId>,
    ) -> Result<(Value, Option<SamplingUsage>), ErrorObject> {
        self.current()
            .create_message_measured(request, related)
            .await
    }

    fn capability(&self) -> Value {
        self.current().capability()
    }
}
