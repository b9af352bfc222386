// Package wirejson appends JSON by hand where encoding/json's reflection
// costs too much, byte for byte as encoding/json writes it.
package wirejson

import "encoding/json"

// AppendString appends s as a JSON string, escaped as encoding/json
// escapes it (HTML characters included). Short ASCII words need no
// escaping and are copied; anything else goes through encoding/json.
func AppendString(out []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s)
			return append(out, b...)
		}
	}
	out = append(out, '"')
	out = append(out, s...)
	return append(out, '"')
}
