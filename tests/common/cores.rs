//! Whether core files can be had here: shared by the library's tests and
//! the command-line tool's (`cli/tests/secrets.rs` includes this file).

/// Why core files cannot be had here, if they cannot: the kernel must
/// write them into the working directory (a `core_pattern` that is
/// neither a pipe nor an absolute path).
pub fn cores_forbidden() -> Option<String> {
    let pattern = std::fs::read_to_string("/proc/sys/kernel/core_pattern").unwrap_or_default();
    let pattern = pattern.trim();
    if pattern.starts_with('|') || pattern.starts_with('/') || pattern.is_empty() {
        return Some(format!(
            "kernel.core_pattern is {pattern:?}: cores do not land in the working directory"
        ));
    }
    None
}
