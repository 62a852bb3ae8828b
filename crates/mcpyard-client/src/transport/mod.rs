//! Transports: stdio, Streamable HTTP, legacy SSE.
