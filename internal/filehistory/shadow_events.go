package filehistory

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"
)

// dirWatcher reports what changes in the folders it watches. The Shadow
// that owns one calls it under its mutex; it need not be safe for
// concurrent use. read never blocks: it hands over, in order, what was
// queued since the last read. An event queued is never lost without an
// evOverflow in its place.
type dirWatcher interface {
	// add watches a folder (not the folders in it) and returns a
	// descriptor that names it in events; errWatchLimit when no more
	// folders can be watched.
	add(dir string) (int32, error)
	// remove stops watching a folder.
	remove(wd int32)
	read(fn func(watchEvent)) error
	close() error
}

// errWatchLimit is the user's inotify watch limit being reached.
var errWatchLimit = errors.New("the inotify watch limit (fs.inotify.max_user_watches) is reached")

// watchEvent is one change a watch reported.
type watchEvent struct {
	wd   int32
	kind eventKind
	name string // the entry of the watched folder; "" for the folder itself
	dir  bool   // the entry is a folder
}

type eventKind int

const (
	evWritten  eventKind = iota // written to, or its mode or times changed
	evAppeared                  // made, or moved in
	evVanished                  // deleted, or moved out
	evGoneSelf                  // the watched folder itself was deleted or moved
	evOverflow                  // events were lost
)

// watchedDir is a folder the watcher watches.
type watchedDir struct {
	wd    int32
	rules dirRules // for its entries
	epoch int      // the last walk that entered it
}

// eventBatch is what the watches reported since the last look.
type eventBatch struct {
	resync   bool            // what was reported does not tell everything: walk the tree
	files    map[string]bool // files that may have changed, by path from root
	newDirs  []string        // folders that appeared
	goneDirs []string        // folders that went away
}

// startWatching opens the watcher on the first look.
func (s *Shadow) startWatching() {
	if s.watchTried {
		return
	}
	s.watchTried = true
	w, err := s.openWatch()
	if err != nil {
		s.warnOnce("shadow-watch", fmt.Sprintf("shell change tracking: %v; cairn looks through the whole project around each command instead, which takes longer on a large project", err))
		return
	}
	if w == nil {
		return // no watcher on this system
	}
	s.watch, s.dirs, s.byWD = w, make(map[string]*watchedDir), make(map[int32]string)
}

// stopWatching closes the watcher; the looks walk the tree from then on.
// why, when not empty, is said once.
func (s *Shadow) stopWatching(why string) {
	if s.watch == nil {
		return
	}
	s.watch.close()
	s.watch, s.dirs, s.byWD, s.synced = nil, nil, nil, false
	if why != "" {
		s.warnOnce("shadow-watch", why)
	}
}

// addWatch watches a folder the walk is about to list.
func (s *Shadow) addWatch(dir string) (int32, bool) {
	if s.watch == nil {
		return 0, false
	}
	wd, err := s.watch.add(dir)
	switch {
	case err == nil:
		return wd, true
	case errors.Is(err, errWatchLimit):
		s.stopWatching(fmt.Sprintf("shell change tracking: %v after %d folders; cairn looks through the whole project around each command instead, which takes longer on a large project. Raise the limit (sysctl fs.inotify.max_user_watches=524288) to make it quick again", err, len(s.dirs)))
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR), errors.Is(err, fs.ErrPermission):
		// Gone or unreadable: the listing that follows fails too.
	default:
		s.stopWatching(fmt.Sprintf("shell change tracking: cannot watch %s (%v); cairn looks through the whole project around each command instead", dir, err))
	}
	return 0, false
}

// recordDir notes a folder the walk entered and watches.
func (s *Shadow) recordDir(rel string, wd int32, rules dirRules) {
	if s.watch == nil {
		return
	}
	if old, ok := s.dirs[rel]; ok && old.wd != wd {
		delete(s.byWD, old.wd)
	}
	s.dirs[rel] = &watchedDir{wd: wd, rules: rules, epoch: s.epoch}
	s.byWD[wd] = rel
}

// walked ends a walk of the whole tree: a complete walk with every
// folder watched makes the shadow current, and the folders it did not
// enter (since deleted, or now ignored) are no longer watched.
func (s *Shadow) walked(complete bool) {
	if s.watch == nil || !complete {
		s.synced = false
		return
	}
	for rel, d := range s.dirs {
		if d.epoch != s.epoch {
			s.watch.remove(d.wd)
			delete(s.byWD, d.wd)
			delete(s.dirs, rel)
		}
	}
	s.synced = true
}

// forgetTree stops watching a folder and the folders in it.
func (s *Shadow) forgetTree(rel string) {
	for r, d := range s.dirs {
		if r == rel || strings.HasPrefix(r, rel+"/") {
			s.watch.remove(d.wd)
			delete(s.byWD, d.wd)
			delete(s.dirs, r)
		}
	}
}

// drain takes what the watches reported since the last look.
func (s *Shadow) drain() eventBatch {
	b := eventBatch{files: make(map[string]bool)}
	err := s.watch.read(func(ev watchEvent) {
		if ev.kind == evOverflow {
			b.resync = true
			return
		}
		dir, ok := s.byWD[ev.wd]
		if !ok {
			return // a folder no longer watched
		}
		if ev.kind == evGoneSelf {
			if dir == "" {
				b.resync = true // the project folder itself
				return
			}
			delete(s.byWD, ev.wd)
			if d := s.dirs[dir]; d != nil && d.wd == ev.wd {
				delete(s.dirs, dir)
			}
			return
		}
		if ev.name == "" {
			return
		}
		rel := ev.name
		if dir != "" {
			rel = dir + "/" + ev.name
		}
		switch {
		case ev.name == ".gitignore":
			b.resync = true // what is ignored may have changed
		case !ev.dir:
			b.files[rel] = true
		case ev.kind == evAppeared:
			b.newDirs = append(b.newDirs, rel)
		case ev.kind == evVanished:
			b.goneDirs = append(b.goneDirs, rel)
		}
	})
	if err != nil {
		s.stopWatching(fmt.Sprintf("shell change tracking: %v; cairn looks through the whole project around each command instead", err))
		b.resync = true
	}
	return b
}

// settle turns a batch into the sorted paths of the files to look at:
// those reported, those in folders that went away, and those found in
// folders that appeared (which are watched from then on). ok is false
// when the folders that appeared could not all be looked through in
// time; the next look walks the tree.
func (s *Shadow) settle(ctx context.Context, deadline time.Time, b eventBatch) (paths []string, ok bool, err error) {
	ok = true
	for _, gone := range b.goneDirs {
		for rel := range s.files {
			if strings.HasPrefix(rel, gone+"/") {
				b.files[rel] = true
			}
		}
		s.forgetTree(gone)
	}
	for _, rel := range b.newDirs {
		parent := s.dirs[parentOf(rel)]
		abs := s.abs(rel)
		if parent == nil || parent.rules.ignores(path.Base(rel), true) || slices.Contains(s.skip, abs) {
			continue
		}
		w := &treeWalk{s: s, ctx: ctx, deadline: deadline, top: s.top, fn: func(rel string, _ fs.FileInfo) { b.files[rel] = true }}
		switch err := w.visit(abs, rel, parent.rules.ps); {
		case err == errOutOfTime:
			s.warnOnce("shadow-time", fmt.Sprintf("shell change tracking: looking through the new folder %s takes longer than %v; changes commands make to the files beyond %s cannot be rewound until the next look", abs, s.opts.Budget, w.last))
			ok = false
		case err != nil:
			return nil, false, err
		}
		if s.watch == nil {
			return nil, false, nil // the watch limit was reached
		}
	}
	paths = make([]string, 0, len(b.files))
	for rel := range b.files {
		paths = append(paths, rel)
	}
	slices.Sort(paths)
	return paths, ok, nil
}

// present returns the file at rel when the looks would see it: a regular
// file, in a watched folder, that is not ignored.
func (s *Shadow) present(rel string) (fs.FileInfo, bool) {
	d := s.dirs[parentOf(rel)]
	if d == nil || d.rules.ignores(path.Base(rel), false) {
		return nil, false
	}
	fi, err := os.Lstat(s.abs(rel))
	if err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	return fi, true
}

// beforeEvents brings the shadow up to date from the watches before a
// command. It reports false when the tree must be walked instead.
func (s *Shadow) beforeEvents(ctx context.Context, deadline time.Time) bool {
	b := s.drain()
	if b.resync {
		s.synced = false
		return false
	}
	paths, ok, err := s.settle(ctx, deadline, b)
	if err != nil || s.watch == nil {
		s.synced = false
		return false
	}
	for _, rel := range paths {
		if fi, ok := s.present(rel); ok {
			s.seeBefore(rel, fi)
		} else if s.files[rel] != nil {
			s.drop(rel)
		}
	}
	if !ok {
		// Files beyond where the new folder's look stopped are unknown:
		// the look after the command must not take them for new.
		s.complete = false
	}
	s.synced = ok
	return true
}

// afterEvents returns what a command changed, from what the watches
// reported while it ran. ok is false when the tree must be walked
// instead; nothing has been changed then.
func (s *Shadow) afterEvents(ctx context.Context, deadline time.Time) (out []shellChange, ok bool) {
	b := s.drain()
	if b.resync {
		s.synced = false
		return nil, false
	}
	paths, complete, err := s.settle(ctx, deadline, b)
	if err != nil || s.watch == nil {
		s.synced = false
		return nil, false
	}
	for _, rel := range paths {
		var c shellChange
		var changed bool
		if fi, ok := s.present(rel); ok {
			c, changed = s.seeAfter(rel, fi, true)
		} else if f := s.files[rel]; f != nil {
			c, changed = s.gone(rel, f)
		}
		if changed {
			out = append(out, c)
		}
	}
	s.synced = complete
	return out, true
}

// parentOf returns the folder of a path from root ("" for root's entries).
func parentOf(rel string) string {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return ""
	}
	return rel[:i]
}
