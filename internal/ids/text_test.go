package ids

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestKey(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want: substring of the reason, "" = canonical
	}{
		{"usdt", ""}, {"erc20", ""}, {"bsc-bep20", ""}, {"usdt.e", ""}, {"a_b", ""},
		{"", "is empty"},
		{"USDT", `use "usdt"`}, {"Usdt", `use "usdt"`}, {"uSDT", `use "usdt"`},
		{"usdt ", `use "usdt"`}, {" usdt", `use "usdt"`}, {"usdt\n", `use "usdt"`},
		{"us dt", "is not a key"}, {"-usdt", "is not a key"}, {"usdt-", "is not a key"},
		{"us--dt", "is not a key"}, {"usdt\u200b", "is not a key"}, {"ｕｓｄｔ", "is not a key"},
		{strings.Repeat("a", 33), "longer than 32"},
	} {
		got := Key(tc.in)
		if tc.want == "" {
			assert.Empty(t, got, "%q", tc.in)
		} else {
			assert.Contains(t, got, tc.want, "%q", tc.in)
		}
	}
}

func TestText(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"order-1", ""}, {"заказ 7", ""}, {"注文", ""}, {"a b", ""}, {"café", ""},
		{"order-1 ", "white space"}, {" order-1", "white space"}, {"order\u00a0", "white space"},
		{"ord\ner", "control"}, {"ord\x1b]8;;x\x07er", "control"}, {"ord\u0085er", "control"},
		{"ord\u202eer", "invisible"}, {"ord\u200ber", "invisible"}, {"ord\u2066er", "invisible"},
		{"ord\ufeffer", "invisible"}, {"ord\u2028er", "invisible"}, {"ord\ue000er", "invisible"},
		{"ord\u034fer", "invisible"}, {"ord\ufe0fer", "invisible"}, {"ord\U000e0001er", "invisible"},
		{"ord\xffer", "UTF-8"},
		{strings.Repeat("x", 129), "longer than 128"},
	} {
		got := Text(tc.in, 128)
		if tc.want == "" {
			assert.Empty(t, got, "%q", tc.in)
		} else {
			assert.Contains(t, got, tc.want, "%q", tc.in)
		}
	}
}

func FuzzText(f *testing.F) {
	for _, s := range []string{"order-1", " x", "a\u202eb", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if Text(s, 128) == "" {
			// Accepted text survives a trim and has no invisible rune.
			assert.Equal(t, strings.TrimSpace(s), s)
			assert.False(t, strings.ContainsFunc(s, Invisible))
		}
		if Key(s) == "" {
			assert.Equal(t, strings.ToLower(s), s)
		}
	})
}

// TestTextASCIIFastPath: the byte-by-byte answer for ASCII text is the
// rune-by-rune one, for every string of one and two ASCII bytes and for
// every ASCII rune, so the fast path refuses and accepts exactly what the
// Unicode tables do.
func TestTextASCIIFastPath(t *testing.T) {
	for r := rune(0); r < utf8.RuneSelf; r++ {
		assert.Equal(t, invisibleTables(r), Invisible(r), "%U", r)
	}
	var diff []string
	check := func(s string, max int) {
		if got, want := Text(s, max), textRunes(s, max); got != want {
			diff = append(diff, strconv.Quote(s)+": "+got+" / "+want)
		}
	}
	for a := range utf8.RuneSelf {
		check(string(rune(a)), 8)
		check(string(rune(a))+"x", 1)
		for b := range utf8.RuneSelf {
			check(string([]byte{byte(a), byte(b)}), 8)
			check("id "+string([]byte{byte(a), byte(b)})+" 7", 8)
		}
	}
	assert.Empty(t, diff)
}
