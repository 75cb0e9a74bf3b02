/// Whether `text` holds a NUL byte, which C would silently read as the end of the string:
/// such a path or host name is refused with `EINVAL` instead of naming something else.
func containsNUL(_ text: String) -> Bool {
    text.utf8.contains(0)
}
