package threadwire

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

func TestPage(t *testing.T) {
	all := []string{"a", "b", "c", "d"}
	str := func(s string) *string { return &s }
	n := func(i int) *int { return &i }
	id := func(s string) string { return s }
	for _, tc := range []struct {
		cursor *string
		limit  *int
		want   []string
		next   *string
	}{
		{nil, nil, all, nil},
		{str(""), n(0), all, nil},
		{nil, n(2), []string{"a", "b"}, str("b")},
		{str("b"), n(2), []string{"c", "d"}, nil},
		{str("b"), n(1), []string{"c"}, str("c")},
		{str("d"), nil, []string{}, nil},
		{nil, n(9), all, nil},
	} {
		got, err := Page(all, tc.cursor, tc.limit, id)
		if err != nil || !reflect.DeepEqual(got.Data, tc.want) || !reflect.DeepEqual(got.NextCursor, tc.next) {
			t.Errorf("Page(%v, %v) = %v, %v, %v; want %v, %v", tc.cursor, tc.limit, got.Data, got.NextCursor, err, tc.want, tc.next)
		}
	}
	_, err := Page(all, str("zz"), nil, id)
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Kind != protocol.ErrInvalidParams {
		t.Errorf("Page with an unknown cursor: %v, want invalid params", err)
	}
}

func TestItemEntries(t *testing.T) {
	m := func(id string) protocol.ThreadItem { return protocol.AgentMessageItem{ID: id} }
	turns := []protocol.Turn{{ID: "t1", Items: []protocol.ThreadItem{m("a"), m("b")}}, {ID: "t2"}, {ID: "t3", Items: []protocol.ThreadItem{m("c")}}}
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		turn *string
		want []string // turn/item
		ok   bool
	}{
		{nil, []string{"t1/a", "t1/b", "t3/c"}, true},
		{str("t3"), []string{"t3/c"}, true},
		{str("t2"), []string{}, true},
		{str("t9"), []string{}, false},
	} {
		items, ok := ItemEntries(turns, tc.turn)
		got := []string{}
		for _, e := range items {
			got = append(got, e.TurnID+"/"+e.Item.ItemID())
		}
		if ok != tc.ok || !reflect.DeepEqual(got, tc.want) || items == nil {
			t.Errorf("ItemEntries(%v) = %v, %v; want %v, %v (never nil)", tc.turn, got, ok, tc.want, tc.ok)
		}
	}
}

func TestListOptions(t *testing.T) {
	str := func(s string) *string { return &s }
	yes, lim, ids := true, 7, []string{"x"}
	for _, tc := range []struct {
		p    protocol.ThreadListParams
		want store.ListOptions
	}{
		{protocol.ThreadListParams{}, store.ListOptions{}},
		{protocol.ThreadListParams{SortKey: str("created_at"), SortDirection: str("desc")}, store.ListOptions{}},
		{protocol.ThreadListParams{Cursor: str("c"), Limit: &lim, SortKey: str("updated_at"), SortDirection: str("asc"), Archived: &yes,
			Cwd: json.RawMessage(`"/w"`), SearchTerm: str("s"), ModelProviders: []string{"p"}, IncludedThreadIDs: &ids},
			store.ListOptions{Cursor: "c", Limit: 7, SortKey: "updated_at", Ascending: true, Archived: true, Cwds: []string{"/w"},
				SearchTerm: "s", ModelProviders: []string{"p"}, IDs: ids, OnlyIDs: true}},
		{protocol.ThreadListParams{SortKey: str("recency"), Cwd: json.RawMessage(`["/a","/b"]`), IncludedThreadIDs: &[]string{}},
			store.ListOptions{SortKey: "updated_at", Cwds: []string{"/a", "/b"}, IDs: []string{}, OnlyIDs: true}},
	} {
		if got := ListOptions(tc.p); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ListOptions(%+v) = %+v, want %+v", tc.p, got, tc.want)
		}
	}
}
