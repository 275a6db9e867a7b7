//go:build !linux

package filehistory

// openWatcher returns no watcher: only Linux has one (inotify), so
// elsewhere the shadow walks the tree around each command.
func openWatcher() (dirWatcher, error) { return nil, nil }
