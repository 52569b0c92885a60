package mysqlstore

// runChild runs the child process of a multi-process test, if this
// process is one, and reports whether it was.
func runChild() bool { return false }
