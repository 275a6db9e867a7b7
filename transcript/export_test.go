package transcript

// SetMaxLine lowers the longest line read for a test; the returned func
// restores it.
func SetMaxLine(n int) func() {
	old := maxLine
	maxLine = n
	return func() { maxLine = old }
}
