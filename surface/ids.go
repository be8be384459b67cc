package surface

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/wardenmcp/warden/protocol"
)

// The SDK reads a request's numeric id into an int64 through a float64, and
// answers under that: 1.5 as 1, 9007199254740993 as 9007199254740992. A
// client could not tell its answer, or would take it for another request's.
// Such a request is refused, saying why, before the SDK reads it
// (checkPOST).

// maxExactID is the largest whole number a float64 holds exactly (2^53).
const maxExactID = 1 << 53

// inexactID finds, in body, a request (with a method) whose numeric id is
// not answerable. Keys are read as the SDK reads them, in their own case.
func inexactID(body []byte) (json.RawMessage, bool) {
	batch, err := protocol.Messages[map[string]json.RawMessage](body)
	if err != nil {
		return nil, false // the SDK's to refuse
	}
	for _, m := range batch {
		id := m["id"] // valid JSON: no spaces around it
		if m["method"] == nil || len(id) == 0 || id[0] != '-' && (id[0] < '0' || id[0] > '9') {
			continue // a string id, null, or none
		}
		if !answerable(string(id)) {
			return id, true
		}
	}
	return nil, false
}

// answerable reports whether the SDK answers a request of numeric id n (a
// JSON number) under the same number: a whole number written as one, of
// at most 2^53; in another form, one that reads as such a float64 (as most
// JSON readers read any number).
func answerable(n string) bool {
	if i, err := strconv.ParseInt(n, 10, 64); err == nil {
		return -maxExactID <= i && i <= maxExactID
	}
	v, err := strconv.ParseFloat(n, 64)
	return err == nil && v == math.Trunc(v) && math.Abs(v) <= maxExactID
}
