package tui

// transcript is the scrollable list of items. It is virtualised: a
// frame renders only the items it shows, and each item's lines are
// cached, so the cost of a frame does not grow with the session.
//
// The position is either follow (the newest line at the bottom of the
// screen, as while the model writes) or an anchor: the item and the line
// within it shown at the top.
type transcript struct {
	items  []*item
	follow bool
	anchor int // item shown first when not following
	offset int // line of that item shown first
}

func newTranscript() transcript { return transcript{follow: true} }

func (t *transcript) add(it *item) *item {
	t.items = append(t.items, it)
	return it
}

func (t *transcript) reset() { *t = newTranscript() }

// view returns the height lines the transcript shows.
func (t *transcript) view(r *renderer, width, height int) []string {
	if height <= 0 {
		return nil
	}
	if !t.follow {
		out := make([]string, 0, height)
		i, off := t.anchor, t.offset
		for i < len(t.items) && len(out) < height {
			lines := t.items[i].lines(r, width)
			if off < len(lines) {
				out = append(out, lines[off:]...)
			}
			i, off = i+1, 0
		}
		if len(out) >= height {
			return out[:height]
		}
		// The end is on screen: follow again.
		t.follow = true
	}
	return t.bottom(r, width, height)
}

// bottom is the last height lines, padded at the top.
func (t *transcript) bottom(r *renderer, width, height int) []string {
	var chunks [][]string
	n := 0
	for i := len(t.items) - 1; i >= 0 && n < height; i-- {
		lines := t.items[i].lines(r, width)
		chunks = append(chunks, lines)
		n += len(lines)
	}
	out := make([]string, 0, max(n, height))
	for range height - n {
		out = append(out, "")
	}
	for i := len(chunks) - 1; i >= 0; i-- {
		out = append(out, chunks[i]...)
	}
	return out[len(out)-height:]
}

// top is the position of the first line on screen when following.
func (t *transcript) top(r *renderer, width, height int) (anchor, offset int) {
	n := 0
	for i := len(t.items) - 1; i >= 0; i-- {
		l := len(t.items[i].lines(r, width))
		if n+l >= height {
			return i, n + l - height
		}
		n += l
	}
	return 0, 0
}

// scroll moves the view by delta lines: up when negative.
func (t *transcript) scroll(r *renderer, width, height, delta int) {
	if len(t.items) == 0 {
		return
	}
	if t.follow {
		if delta >= 0 {
			return
		}
		t.anchor, t.offset = t.top(r, width, height)
		t.follow = false
	}
	t.offset += delta
	for t.offset < 0 && t.anchor > 0 {
		t.anchor--
		t.offset += len(t.items[t.anchor].lines(r, width))
	}
	t.offset = max(t.offset, 0)
	for t.anchor < len(t.items)-1 && t.offset >= len(t.items[t.anchor].lines(r, width)) {
		t.offset -= len(t.items[t.anchor].lines(r, width))
		t.anchor++
	}
	// Past the end: follow (view checks whether the rest fills the screen).
	n := 0
	for i := t.anchor; i < len(t.items) && n-t.offset <= height; i++ {
		n += len(t.items[i].lines(r, width))
	}
	if n-t.offset <= height {
		t.follow = true
	}
}

// home shows the first line; end follows the newest.
func (t *transcript) home() { t.follow, t.anchor, t.offset = false, 0, 0 }
func (t *transcript) end()  { t.follow = true }

// find returns the item of a tool call by its id, newest first.
func (t *transcript) find(callID string) *item {
	for i := len(t.items) - 1; i >= 0; i-- {
		if it := t.items[i]; it.kind == kindTool && it.call.ID == callID {
			return it
		}
	}
	return nil
}
