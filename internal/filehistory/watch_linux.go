//go:build linux

package filehistory

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// watcher reports changes under the folders it watches, through Linux's
// inotify. It has no goroutine: read drains what the kernel queued, and
// the kernel queues an event before the system call that caused it
// returns, so when a command has exited its events are all there. The
// Shadow that owns it serialises every call.
type watcher struct {
	fd  int
	buf []byte
}

// watchMask is what a folder's watch reports: entries made, removed,
// renamed or written, and the folder itself going away. Opening and
// reading are left out, so a read-only command makes no events. Symbolic
// links are not followed, and only folders are watched.
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_CLOSE_WRITE | unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW | unix.IN_EXCL_UNLINK

// openWatcher starts an inotify instance; an error means the shadow
// scans the tree instead.
func openWatcher() (dirWatcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		if errors.Is(err, unix.EMFILE) {
			return nil, fmt.Errorf("inotify is unavailable: too many inotify instances (raise fs.inotify.max_user_instances): %w", err)
		}
		return nil, fmt.Errorf("inotify is unavailable: %w", err)
	}
	return &watcher{fd: fd, buf: make([]byte, 64<<10)}, nil
}

// add watches a folder and returns its watch descriptor; watching a
// folder already watched returns the same descriptor.
func (w *watcher) add(dir string) (int32, error) {
	wd, err := unix.InotifyAddWatch(w.fd, dir, watchMask)
	if errors.Is(err, unix.ENOSPC) {
		return 0, errWatchLimit
	}
	return int32(wd), err
}

// remove stops watching a folder; one already gone is no error.
func (w *watcher) remove(wd int32) {
	unix.InotifyRmWatch(w.fd, uint32(wd))
}

// read drains the queued events, calling fn with each in order.
func (w *watcher) read(fn func(watchEvent)) error {
	for {
		n, err := unix.Read(w.fd, w.buf)
		switch {
		case errors.Is(err, unix.EAGAIN):
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return fmt.Errorf("read inotify events: %w", err)
		case n < unix.SizeofInotifyEvent:
			return nil
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			raw := (*unix.InotifyEvent)(unsafe.Pointer(&w.buf[off]))
			name := ""
			if raw.Len > 0 {
				b := w.buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(raw.Len)]
				for i, c := range b {
					if c == 0 {
						b = b[:i]
						break
					}
				}
				name = string(b)
			}
			off += unix.SizeofInotifyEvent + int(raw.Len)
			fn(translate(raw.Wd, raw.Mask, name))
		}
	}
}

// translate turns an inotify event into what the shadow acts on.
func translate(wd int32, mask uint32, name string) watchEvent {
	ev := watchEvent{wd: wd, name: name, dir: mask&unix.IN_ISDIR != 0}
	switch {
	case mask&unix.IN_Q_OVERFLOW != 0:
		ev.kind = evOverflow
	case mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_IGNORED|unix.IN_UNMOUNT) != 0:
		ev.kind = evGoneSelf
	case mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
		ev.kind = evAppeared
	case mask&(unix.IN_DELETE|unix.IN_MOVED_FROM) != 0:
		ev.kind = evVanished
	default:
		ev.kind = evWritten
	}
	return ev
}

// close stops every watch.
func (w *watcher) close() error { return unix.Close(w.fd) }
