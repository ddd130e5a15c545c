package executor

import "github.com/a6afc2ce/hermes-hub/internal/jsonstr"

// JSONAppender is implemented by verb results that encode themselves, for
// results large or frequent enough that encoding/json's reflection shows in
// a profile. AppendJSON must append exactly the bytes encoding/json would
// produce for the value with HTML escaping off (the way Outcome.JSON
// encodes), without a trailing newline; implementations test that against
// AppendEncodingJSON.
type JSONAppender interface {
	AppendJSON(dst []byte) []byte
}

// AppendResultJSON appends r's fields as encoding/json writes them at the
// start of an object whose first fields are an embedded Result: the opening
// brace and `"succeeded":…`, then errorMessage and errorCode when set. The
// caller appends its own fields (each preceded by a comma) and the closing
// brace.
func AppendResultJSON(dst []byte, r *Result) []byte {
	if r.Succeeded {
		dst = append(dst, `{"succeeded":true`...)
	} else {
		dst = append(dst, `{"succeeded":false`...)
	}
	if r.ErrorMessage != "" {
		dst = append(dst, `,"errorMessage":`...)
		dst = AppendJSONString(dst, r.ErrorMessage)
	}
	if r.ErrorCode != "" {
		dst = append(dst, `,"errorCode":`...)
		dst = AppendJSONString(dst, string(r.ErrorCode))
	}
	return dst
}

// AppendJSONString appends s as a JSON string exactly as encoding/json
// encodes a string with HTML escaping off: `"` and `\` escaped, \b \f \n \r
// \t by name, other control bytes as \u00XX, each invalid UTF-8 byte as
// \ufffd, U+2028 and U+2029 as \u2028 and \u2029, everything else as is.
func AppendJSONString(dst []byte, s string) []byte { return jsonstr.Append(dst, s, false) }
