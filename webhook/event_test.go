package webhook

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScanEventSyntax(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat(`{"a":`, maxEventDepth-1) + "1" + strings.Repeat("}", maxEventDepth-1)
	tooDeep := strings.Repeat(`[`, maxEventDepth) + strings.Repeat("]", maxEventDepth)
	tests := []struct {
		name string
		body string
		ok   bool
	}{
		{"empty object", `{}`, true},
		{"spaces around", " \t\r\n{ \"a\" : 1 } \n", true},
		{"every value kind", `{"s":"x\"\\\/\b\f\n\r\t\u00e9","n":-0.5e+10,"t":true,"f":false,"z":null,"a":[1,[],{}],"o":{"k":[]}}`, true},
		{"nested to the limit", deep, true},
		{"nested too deep", `{"a":` + tooDeep + `}`, false},
		{"empty", ``, false},
		{"not an object", `[]`, false},
		{"string", `"x"`, false},
		{"trailing data", `{}{}`, false},
		{"trailing comma", `{"a":1,}`, false},
		{"missing colon", `{"a" 1}`, false},
		{"unquoted key", `{a:1}`, false},
		{"single quotes", `{'a':1}`, false},
		{"control char in string", "{\"a\":\"x\ny\"}", false},
		{"bad escape", `{"a":"\x"}`, false},
		{"short unicode escape", `{"a":"\u12"}`, false},
		{"unterminated string", `{"a":"x}`, false},
		{"leading zero", `{"a":01}`, false},
		{"plus sign", `{"a":+1}`, false},
		{"bare dot", `{"a":1.}`, false},
		{"bare exponent", `{"a":1e}`, false},
		{"NaN", `{"a":NaN}`, false},
		{"truncated literal", `{"a":tru}`, false},
		{"byte order mark", "\xef\xbb\xbf{}", false},
		{"unclosed", `{"a":[1,2}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := scanEvent([]byte(tt.body))
			if tt.ok {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, errBadEvent)
			}
			if tt.name != "nested too deep" { // encoding/json accepts more nesting than maxEventDepth
				assert.Equal(t, json.Valid([]byte(tt.body)) && strings.HasPrefix(strings.TrimSpace(tt.body), "{"), tt.ok,
					"agrees with encoding/json")
			}
		})
	}
}

func TestScanEventMembers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name             string
		body             string
		paymentID, order string // raw tokens; "" means absent
		ambiguous        bool
	}{
		{"plain", `{"paymentId":"p","orderId":"o","status":"paid"}`, `"p"`, `"o"`, false},
		{"nested members ignored", `{"x":{"orderId":"inner"},"orderId":"o"}`, "", `"o"`, false},
		{"case-insensitive, as encoding/json", `{"PAYMENTID":"p","OrderID":"o"}`, `"p"`, `"o"`, false},
		{"escaped key", `{"order\u0049d":"o"}`, "", `"o"`, false},
		{"long s folds to s, as in encoding/json", `{"orderId":"o","ſtatus":"x","status":"y"}`, "", `"o"`, true},
		{"twice", `{"orderId":"a","orderId":"b"}`, "", `"b"`, true},
		{"twice under folded keys", `{"orderId":"a","ORDERID":"b"}`, "", `"b"`, true},
		{"null kept as a token", `{"paymentId":null}`, "null", "", false},
		{"long number elsewhere is not decoded", `{"other":` + strings.Repeat("9", 1000) + `}`, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := scanEvent([]byte(tt.body))
			require.NoError(t, err)
			assert.Equal(t, tt.paymentID, string(f.paymentID))
			assert.Equal(t, tt.order, string(f.orderID))
			assert.Equal(t, tt.ambiguous, f.ambiguous)
		})
	}
}

func TestJSONString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw  string
		want string
		ok   bool
	}{
		{`"order-1"`, "order-1", true},
		{`"заказ"`, "заказ", true},
		{`"a\"b\u00e9"`, "a\"bé", true},
		{"\"\xff\xfe\"", "\ufffd\ufffd", true}, // as encoding/json decodes it
		{`"\ud800"`, "\ufffd", true},
		{`12`, "", false},
		{`null`, "", false},
		{``, "", false},
	}
	for _, tt := range tests {
		got, ok := jsonString([]byte(tt.raw))
		assert.Equal(t, tt.ok, ok, tt.raw)
		assert.Equal(t, tt.want, got, tt.raw)
		if tt.ok {
			var s string
			require.NoError(t, json.Unmarshal([]byte(tt.raw), &s))
			assert.Equal(t, s, got, "same as encoding/json")
		}
	}
}
