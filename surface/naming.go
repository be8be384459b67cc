package surface

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxName is the longest name many clients accept (^[a-zA-Z0-9_-]{1,64}$).
const maxName = 64

// Join names a server's tool or prompt on the aggregated endpoint:
// "<server>__<name>", using only [A-Za-z0-9_-] and at most 64 characters. A
// name that had to be altered (characters replaced or cut) gets a short hash
// of the original pair, so two different originals never meet.
func Join(server, name string) string {
	full := server + "__" + name
	clean := sanitize(full)
	if clean == full && len(full) <= maxName {
		return full
	}
	sum := sha256.Sum256([]byte(server + "\x00" + name))
	suffix := "_" + hex.EncodeToString(sum[:4])
	if len(clean) > maxName-len(suffix) {
		clean = clean[:maxName-len(suffix)]
	}
	return clean + suffix
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, s)
}
