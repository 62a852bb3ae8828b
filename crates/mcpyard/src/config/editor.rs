//! VS Code's predefined variables in the files it writes (`mcp.json`),
//! so that they are read unchanged.

use std::path::Path;

/// The folder VS Code calls `${workspaceFolder}` for this file: the one
/// holding `.vscode/` when the file is in it, else the file's own folder;
/// absolute, so that it means the same wherever mcpyard is started.
pub(super) fn workspace_folder(path: &Path) -> Option<std::path::PathBuf> {
    let absolute = std::path::absolute(path).ok()?;
    let dir = absolute.parent()?;
    match dir.file_name().and_then(|n| n.to_str()) {
        Some(".vscode") => dir.parent().map(Path::to_path_buf),
        _ => Some(dir.to_path_buf()),
    }
}

/// What VS Code's predefined variable `name` stands for in the file at
/// `path` (`None`: not one of them), for a tool that copies its entries.
pub(crate) fn editor_variable_of(path: &Path, name: &str) -> Option<String> {
    editor_variable(workspace_folder(path).as_deref(), name)
}

/// VS Code's predefined variables, so that its `mcp.json` files are read
/// unchanged: `${workspaceFolder}`, `${workspaceFolderBasename}`,
/// `${userHome}` and `${pathSeparator}` (`${/}` is handled by `expand`).
pub(super) fn editor_variable(workspace: Option<&Path>, name: &str) -> Option<String> {
    match name {
        "workspaceFolder" => workspace.map(|w| w.display().to_string()),
        "workspaceFolderBasename" => workspace
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned()),
        "userHome" => std::env::var("HOME").ok(),
        "pathSeparator" => Some(std::path::MAIN_SEPARATOR.to_string()),
        _ => None,
    }
}
