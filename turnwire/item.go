package turnwire

import (
	"encoding/json"

	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// Encode is the stored JSON of item. Every item type encodes itself
// (compact, with its "type" tag); calling that directly spares the copy
// json.Marshal makes of the result, which for an answer cut at a 64 MiB
// response cap is 64 MiB more at the worst moment. An item whose encoding
// is protocol.HugeEncoding or more comes back as an encoding that escapes
// its long strings as it is written (the same bytes): the store writes it
// straight to the item's side file, and the JSON is never held whole.
func Encode(item protocol.ThreadItem) ([]byte, store.Encoding, error) {
	if l, ok, err := protocol.MarshalLarge(item, true); err == nil && ok {
		if l.Len() >= protocol.HugeEncoding {
			return nil, l, nil
		}
		return l.AppendTo(make([]byte, 0, l.Len())), nil, nil
	}
	if m, ok := item.(json.Marshaler); ok {
		b, err := m.MarshalJSON()
		return b, nil, err
	}
	b, err := json.Marshal(item)
	return b, nil, err
}

// Failed is a tool item of a failed turn, completed as failed; ok is
// false for an item that stays open (a context compaction that never
// compacted anything). Other items come back as they are.
func Failed(it protocol.ThreadItem) (_ protocol.ThreadItem, ok bool) {
	switch item := it.(type) {
	case protocol.CommandExecutionItem:
		item.Status = protocol.ItemFailed
		return item, true
	case protocol.FileChangeItem:
		item.Status = protocol.ItemFailed
		return item, true
	case protocol.DynamicToolCallItem:
		item.Status = protocol.ItemFailed
		return item, true
	case protocol.ContextCompactionItem:
		return it, false
	}
	return it, true
}

// Reasoning holds a reasoning item's streamed summary (kind 0) and
// content (kind 1) parts, by index, until the item completes: appending
// each delta to a string would copy the part so far at every delta.
type Reasoning struct {
	parts [2][]model.TextBuffer
}

// Part is the buffer of the summary (kind 0) or content (kind 1) part i.
func (r *Reasoning) Part(kind, i int) *model.TextBuffer {
	for len(r.parts[kind]) <= i {
		r.parts[kind] = append(r.parts[kind], model.TextBuffer{})
	}
	return &r.parts[kind][i]
}

// Drop lets go of the buffers of one kind (the final event's parts are
// the whole text).
func (r *Reasoning) Drop(kind int) { r.parts[kind] = nil }

// Reset lets go of every buffer.
func (r *Reasoning) Reset() { r.parts = [2][]model.TextBuffer{} }

// Item is item with the streamed parts joined in; the buffers are let go.
func (r *Reasoning) Item(item protocol.ReasoningItem) protocol.ReasoningItem {
	for kind, dst := range [2]*[]string{&item.Summary, &item.Content} {
		bufs := r.parts[kind]
		if len(bufs) == 0 {
			continue
		}
		parts := append([]string(nil), (*dst)...)
		for len(parts) < len(bufs) {
			parts = append(parts, "")
		}
		for i := range bufs {
			if bufs[i].Len() > 0 {
				parts[i] = bufs[i].Take()
			}
		}
		*dst = parts
	}
	r.Reset()
	return item
}
