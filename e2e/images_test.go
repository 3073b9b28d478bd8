package e2e

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

// onePixelPNG is a 1×1 PNG.
const onePixelPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

func writePNG(t *testing.T) string {
	t.Helper()
	b, _ := base64.StdEncoding.DecodeString(onePixelPNG)
	p := filepath.Join(t.TempDir(), "shot.png")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTurnImagesReachModel: turn/start's localImage and image inputs reach
// the model on both wires, as Responses input_image parts and Chat
// image_url parts, a local file as a data: URL; a missing file or a bad URL
// is refused before the turn starts.
func TestTurnImagesReachModel(t *testing.T) {
	t.Parallel()
	dataURL := "data:image/png;base64," + onePixelPNG
	for _, wire := range []string{"responses", "chat"} {
		t.Run(wire, func(t *testing.T) {
			t.Parallel()
			model := startModel(t, scripted.Rule{Match: "look", Steps: []scripted.Step{{Text: "A pixel."}}})
			c := newClient(t, model, options{wire: wire})
			tid, _ := c.startThread("never")
			png := writePNG(t)
			r := c.call("turn/start", map[string]any{"threadId": tid, "input": []any{
				map[string]any{"type": "text", "text": "look at these", "text_elements": []any{}},
				map[string]any{"type": "localImage", "path": png},
				map[string]any{"type": "image", "url": "https://example.com/a.png"},
			}})
			c.turnDone(r.str("turn.id"))
			reqs := waitModelRequests(t, model, 1)
			body := string(reqs[0].Body)
			want := []string{`"type":"input_image"`, `"image_url":"` + dataURL + `"`, `"image_url":"https://example.com/a.png"`, `"input_text"`}
			if wire == "chat" {
				want = []string{`"type":"image_url"`, `"url":"` + dataURL + `"`, `"url":"https://example.com/a.png"`, `"text":"look at these"`}
			}
			for _, w := range want {
				if !strings.Contains(body, w) {
					t.Errorf("model request lacks %s:\n%s", w, body)
				}
			}
			c.callErr("turn/start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "localImage", "path": filepath.Join(t.TempDir(), "none.png")}}}, -32602, "localImage")
			c.callErr("turn/start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "image", "url": "file:///etc/passwd"}}}, -32602, "image url")
		})
	}
}

// TestExecImageReachesModel: `apserver exec --image FILE` (as the Codex
// SDK passes images) sends the image to the model.
func TestExecImageReachesModel(t *testing.T) {
	t.Parallel()
	model := startModel(t, scripted.Rule{Match: "describe", Steps: []scripted.Step{{Text: "A pixel."}}})
	r := runCodexExec(t, model, "describe the image", "exec", "--json", "--image", writePNG(t))
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	reqs := modelRequests(model)
	if len(reqs) == 0 || !strings.Contains(string(reqs[0].Body), `"image_url":"data:image/png;base64,`+onePixelPNG+`"`) {
		t.Errorf("the model was not sent the image: %v", reqs)
	}
}
