package loopguard_test

import (
	"strings"
	"testing"

	"github.com/agentloop/agentloop/loopguard"
)

func TestCanonicalJSON(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "null"},
		{"null", "null", "null"},
		{"sorted keys, no spaces", `{ "b": 1, "a": [true, false, null] }`, `{"a":[true,false,null],"b":1}`},
		{"nested objects sorted", `{"z":{"y":1,"x":2},"a":{}}`, `{"a":{},"z":{"x":2,"y":1}}`},
		{"last duplicate wins", `{"a":1,"a":2}`, `{"a":2}`},
		{"integer-valued float", `1.0`, `1`},
		{"exponent integer", `1e2`, `100`},
		{"decimal", `0.1`, `0.1`},
		{"float rounding kept", `0.30000000000000004`, `0.30000000000000004`},
		{"negative", `-1.5`, `-1.5`},
		{"negative zero", `-0`, `0`},
		{"big integer padded like JS", `1152921504606846976`, `1152921504606847000`},
		{"max safe integer", `9007199254740991`, `9007199254740991`},
		{"below 1e21 stays decimal", `123456789012345680000`, `123456789012345680000`},
		{"1e21 is exponent", `1e21`, `1e+21`},
		{"large exponent", `1.7976931348623157e308`, `1.7976931348623157e+308`},
		{"1e-6 is decimal", `0.000001`, `0.000001`},
		{"1e-7 is exponent", `0.0000001`, `1e-7`},
		{"small with digits", `1.5e-7`, `1.5e-7`},
		{"denormal", `5e-324`, `5e-324`},
		{"overflow is null", `1e400`, `null`},
		{"html chars literal", `"<a href=\"x\">&</a>"`, `"<a href=\"x\">&</a>"`},
		{"line separators literal", "\"\u2028\u2029\"", "\"\u2028\u2029\""},
		{"escaped line separator decoded", `"\u2028"`, "\"\u2028\""},
		{"short escapes", `"\b\f\n\r\t\"\\\/"`, `"\b\f\n\r\t\"\\/"`},
		{"other controls lower hex", `"\u0001\u001F"`, `"\u0001\u001f"`},
		{"DEL literal", `"\u007f"`, "\"\u007f\""},
		{"non-ASCII literal", `"é\u00e9😀"`, `"éé😀"`},
		{"UTF-16 key order", `{"\uffff":1,"😀":2}`, `{"😀":2,"` + "\uffff" + `":1}`},
		{"array order kept", `[3,1,2]`, `[3,1,2]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := loopguard.CanonicalJSON([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("CanonicalJSON(%s) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestCanonicalJSONRejectsInvalid(t *testing.T) {
	for _, in := range []string{`{`, `{"a":1} x`, `nul`} {
		if _, err := loopguard.CanonicalJSON([]byte(in)); err == nil || !strings.Contains(err.Error(), "JSON") {
			t.Errorf("CanonicalJSON(%q) error = %v, want a JSON error", in, err)
		}
	}
}

func TestHashCallEquivalentArguments(t *testing.T) {
	a := loopguard.HashCall("read", []byte(`{"path":"/a","limit":10}`))
	b := loopguard.HashCall("read", []byte(`{ "limit": 10.0, "path": "/a" }`))
	if a != b {
		t.Errorf("equivalent arguments hash differently: %s vs %s", a, b)
	}
	if c := loopguard.HashCall("write", []byte(`{"path":"/a","limit":10}`)); c == a {
		t.Error("different tools hash the same")
	}
	if !strings.HasPrefix(a, "read:") || len(a) != len("read:")+64 {
		t.Errorf("hash %q is not name:sha256hex", a)
	}
}

func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `[1.5e-7,"<&>"]`, `"\u2028"`, `{"b":{"a":[null,true]}}`, `1e400`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := loopguard.CanonicalJSON(data)
		if err != nil {
			return
		}
		// Canonical output is valid JSON and a fixed point.
		c2, err := loopguard.CanonicalJSON(c)
		if err != nil {
			t.Fatalf("canonical output %q does not parse: %v", c, err)
		}
		if string(c2) != string(c) {
			t.Fatalf("not a fixed point: %q -> %q", c, c2)
		}
	})
}
