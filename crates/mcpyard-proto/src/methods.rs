//! MCP method names, in one place so a typo is a compile error.

pub const INITIALIZE: &str = "initialize";
pub const PING: &str = "ping";
pub const SERVER_DISCOVER: &str = "server/discover";
pub const TOOLS_LIST: &str = "tools/list";
pub const TOOLS_CALL: &str = "tools/call";
pub const RESOURCES_LIST: &str = "resources/list";
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
pub const RESOURCES_READ: &str = "resources/read";
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
pub const PROMPTS_LIST: &str = "prompts/list";
pub const PROMPTS_GET: &str = "prompts/get";
pub const COMPLETION_COMPLETE: &str = "completion/complete";
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
/// 2026-07-28: a request whose answer is a stream of change notifications.
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";

/// Tasks (2025-11-25): a call run in the background, polled and fetched later.
pub const TASKS_GET: &str = "tasks/get";
pub const TASKS_RESULT: &str = "tasks/result";
pub const TASKS_CANCEL: &str = "tasks/cancel";
pub const TASKS_LIST: &str = "tasks/list";
/// Tasks extension (2026-07-28, `io.modelcontextprotocol/tasks`): the
/// answers to a task's input requests.
pub const TASKS_UPDATE: &str = "tasks/update";

pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
pub const ELICITATION_CREATE: &str = "elicitation/create";
pub const ROOTS_LIST: &str = "roots/list";

pub const NOTIFICATION_INITIALIZED: &str = "notifications/initialized";
pub const NOTIFICATION_CANCELLED: &str = "notifications/cancelled";
pub const NOTIFICATION_PROGRESS: &str = "notifications/progress";
pub const NOTIFICATION_MESSAGE: &str = "notifications/message";
pub const NOTIFICATION_ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
pub const NOTIFICATION_TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
pub const NOTIFICATION_RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
pub const NOTIFICATION_RESOURCES_UPDATED: &str = "notifications/resources/updated";
pub const NOTIFICATION_PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
pub const NOTIFICATION_TASKS_STATUS: &str = "notifications/tasks/status";
/// The first frame of a `subscriptions/listen` stream: what it will carry.
pub const NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED: &str =
    "notifications/subscriptions/acknowledged";
