package imageinput

import (
	"encoding/base64"
	"fmt"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/apserver/apserver/protocol"
)

// MaxBytes caps one local image sent to the model.
const MaxBytes = 20 << 20

// Load returns the images of a user input as the model takes them: an
// "image" input's URL as given (http, https or data:), a "localImage"
// read from disk into a data: URL. An unreadable or non-image file is an
// error naming it.
func Load(in []protocol.UserInput) ([]string, error) {
	var out []string
	for _, u := range in {
		switch u.Type {
		case "image":
			if !strings.HasPrefix(u.URL, "https://") && !strings.HasPrefix(u.URL, "http://") && !strings.HasPrefix(u.URL, "data:image/") {
				return nil, protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: image url must be http(s) or a data:image/ URL")
			}
			out = append(out, u.URL)
		case "localImage":
			url, err := imageDataURL(u.Path)
			if err != nil {
				return nil, err
			}
			out = append(out, url)
		}
	}
	return out, nil
}

// imageDataURL reads an image file into a data: URL.
func imageDataURL(path string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: localImage path must be absolute: %s", path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return "", protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: localImage %s: %v", path, err)
	}
	if !fi.Mode().IsRegular() || fi.Size() > MaxBytes {
		return "", protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: localImage %s: not a regular file of at most %d MiB", path, MaxBytes>>20)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: localImage %s: %v", path, err)
	}
	typ := http.DetectContentType(b)
	if !strings.HasPrefix(typ, "image/") {
		typ = mime.TypeByExtension(strings.ToLower(filepath.Ext(path)))
	}
	if !strings.HasPrefix(typ, "image/") {
		return "", protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: localImage %s is not an image", path)
	}
	typ, _, _ = strings.Cut(typ, ";")
	return fmt.Sprintf("data:%s;base64,%s", typ, base64.StdEncoding.EncodeToString(b)), nil
}

// Check is turn/start's quick check of its images, on the read
// loop before anything changes: a URL's scheme, a local file's path, kind
// and size (the turn reads it).
func Check(in []protocol.UserInput) error {
	for _, u := range in {
		switch u.Type {
		case "image":
			if _, err := Load([]protocol.UserInput{u}); err != nil {
				return err
			}
		case "localImage":
			if !filepath.IsAbs(u.Path) {
				return protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: localImage path must be absolute: %s", u.Path)
			}
			fi, err := os.Stat(u.Path)
			if err != nil {
				return protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: localImage %s: %v", u.Path, err)
			}
			if !fi.Mode().IsRegular() || fi.Size() > MaxBytes {
				return protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: localImage %s: not a regular file of at most %d MiB", u.Path, MaxBytes>>20)
			}
		}
	}
	return nil
}
