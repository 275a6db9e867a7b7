package cli_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/model/modeltest"
)

func TestPinCommand(t *testing.T) {
	p := newProject(t)
	p.srv.Enqueue(modeltest.Text("first answer"))
	if code, _, e := p.cairn(t, "-p", "first question"); code != 0 {
		t.Fatal(e)
	}
	code, out, e := p.cairn(t, "-c", "-p", "/pin the staging port is 8443")
	if code != 0 || !strings.Contains(out, "the staging port is 8443") {
		t.Fatalf("exit %d: %s\n%s", code, out, e)
	}
	if n := len(p.srv.Requests()); n != 1 {
		t.Errorf("/pin made %d model requests", n-1)
	}
	if !bytes.Contains(p.transcript(t), []byte(`"type":"cairn_pin"`)) {
		t.Error("the transcript does not record the pin")
	}
	// The next run, resumed, shows the model the pin.
	p.srv.Enqueue(modeltest.Text("ok"))
	if code, _, e := p.cairn(t, "-c", "-p", "next"); code != 0 {
		t.Fatal(e)
	}
	if body := p.srv.Last().Body; !bytes.Contains(body, []byte(`pinned this, to be kept word for word for the whole session:\nthe staging port is 8443`)) {
		t.Errorf("the request after /pin lacks the pin: %s", body)
	}
	if code, _, e := p.cairn(t, "-c", "-p", "/pin"); code == 0 || !strings.Contains(e, "nothing to pin") {
		t.Errorf("/pin without text: exit %d, %s", code, e)
	}
}
