//! What `check` may show of how a server is reached: the command line and
//! URL as written, with the values of secret-looking arguments, a URL's
//! credentials and its query left out.

const REDACTED: &str = "<redacted>";

/// Parts of a flag, variable or header name that mark its value as secret.
const SECRET_WORDS: [&str; 9] = [
    "token",
    "key",
    "secret",
    "passw",
    "pwd",
    "auth",
    "credential",
    "cookie",
    "private",
];

fn looks_secret(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    SECRET_WORDS.iter().any(|w| lower.contains(w))
}

/// A flag, variable or header name: no spaces, slashes or quotes.
fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// `command` and `args` joined by spaces, the values of secret-looking
/// arguments redacted: `--token=V`, `--token V`, `TOKEN=V`,
/// `Authorization: V`, and a URL's user info and query.
pub(crate) fn command_line(command: &str, args: &[String]) -> String {
    let mut out = vec![command.to_owned()];
    let mut value_is_secret = false;
    for arg in args {
        // `--token V`: V is the flag's value unless it is itself a flag.
        if std::mem::take(&mut value_is_secret) && !arg.starts_with('-') {
            out.push(REDACTED.to_owned());
            continue;
        }
        let bare = arg.trim_start_matches('-');
        let shown = if arg.starts_with("http://") || arg.starts_with("https://") {
            url(arg)
        } else if let Some((name, _)) = bare.split_once('=') {
            if is_name(name) && looks_secret(name) {
                let dashes = arg.len() - bare.len();
                format!("{}={REDACTED}", &arg[..dashes + name.len()])
            } else {
                arg.clone()
            }
        } else if arg.starts_with('-') {
            value_is_secret = looks_secret(bare);
            arg.clone()
        } else {
            match arg.split_once(':') {
                Some((name, _)) if is_name(name) && looks_secret(name) => {
                    format!("{name}: {REDACTED}")
                }
                _ => arg.clone(),
            }
        };
        out.push(shown);
    }
    out.join(" ")
}

/// A URL without its user info, query or fragment. One that does not parse
/// as written (a `${VAR}` host...) keeps only the part before any query,
/// and before any `@` of user info.
pub(crate) fn url(text: &str) -> String {
    match url::Url::parse(text) {
        Ok(mut u) => {
            let _ = u.set_password(None);
            let _ = u.set_username("");
            u.set_query(None);
            u.set_fragment(None);
            u.to_string()
        }
        Err(_) => {
            let before_query = text.split(['?', '#']).next().unwrap_or_default();
            let Some((scheme, rest)) = before_query.split_once("://") else {
                return before_query.to_owned();
            };
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            format!("{scheme}://{host}{path}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(args: &[&str]) -> String {
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        command_line("srv", &args)
    }

    #[test]
    fn secret_flag_values_are_redacted_in_both_forms() {
        assert_eq!(line(&["--token=abc"]), "srv --token=<redacted>");
        assert_eq!(line(&["--api-key", "abc"]), "srv --api-key <redacted>");
        assert_eq!(line(&["-password", "abc"]), "srv -password <redacted>");
        assert_eq!(
            line(&["--auth", "--verbose", "x"]),
            "srv --auth --verbose x"
        );
        assert_eq!(line(&["AWS_SECRET=abc"]), "srv AWS_SECRET=<redacted>");
        assert_eq!(
            line(&["--header", "X-Api-Key: abc"]),
            "srv --header X-Api-Key: <redacted>"
        );
    }

    #[test]
    fn other_arguments_are_shown_as_written() {
        assert_eq!(
            line(&["-y", "@scope/server", "--port", "80", "--name=a=b", "/tmp"]),
            "srv -y @scope/server --port 80 --name=a=b /tmp"
        );
        assert_eq!(line(&["note: hi"]), "srv note: hi");
    }

    #[test]
    fn urls_lose_credentials_and_queries() {
        assert_eq!(
            url("http://u:p@127.0.0.1:9/mcp?token=t#f"),
            "http://127.0.0.1:9/mcp"
        );
        // Unparsable as written: cut by hand.
        assert_eq!(
            url("http://${HOST}:${PORT}/mcp?k=v"),
            "http://${HOST}:${PORT}/mcp"
        );
        assert_eq!(
            url("http://u:${PASS}@h:${PORT}/a@b"),
            "http://h:${PORT}/a@b"
        );
        assert_eq!(
            line(&["https://u:p@h.test/x?key=1"]),
            "srv https://h.test/x"
        );
    }
}
