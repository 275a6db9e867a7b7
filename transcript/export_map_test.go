package transcript

// SetMapMin lowers the least a load reads of a file to map it; the
// returned func restores it.
func SetMapMin(n int64) func() {
	old := mapMin
	mapMin = n
	return func() { mapMin = old }
}
