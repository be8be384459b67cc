package store

import (
	"context"
	"crypto/rand"
	"fmt"
	"regexp"
	"strings"
)

// Options say which store to open and how.
type Options struct {
	// URL is a postgres:// (or postgresql://) URL; empty opens the embedded
	// store at Path.
	URL string
	// Path is the embedded store's file (the state dir's warden.db).
	Path string
	// Key seals secrets (Tx.PutSecret). Required for a shared store.
	Key string
	// OldKeys still open secrets sealed under them (while rotating).
	OldKeys []string
	// Instance names this process; empty picks a random name.
	Instance string
}

// Open opens the store o names.
func Open(ctx context.Context, o Options) (Store, error) {
	if o.Instance == "" {
		o.Instance = strings.ToLower(rand.Text()[:10])
	}
	seal, err := newSealer(o.Key, o.OldKeys)
	if err != nil {
		return nil, err
	}
	switch {
	case o.URL == "":
		return openBolt(o.Path, o.Instance, seal)
	case strings.HasPrefix(o.URL, "postgres://"), strings.HasPrefix(o.URL, "postgresql://"):
		if seal == nil {
			return nil, fmt.Errorf("a shared store needs storeKey: secrets are never kept in plaintext in PostgreSQL; set \"storeKey\": \"${env:WARDEN_STORE_KEY}\" and give every instance the same key (e.g. openssl rand -base64 32)")
		}
		return openPostgres(ctx, o.URL, o.Instance, seal)
	default:
		return nil, fmt.Errorf("store %q: want a postgres:// URL, or nothing for the embedded store", Redact(o.URL))
	}
}

// passwordParam is a password given as a URL parameter (?password=...).
var passwordParam = regexp.MustCompile(`([?&])password=[^&]*`)

// Redact returns url with any password replaced, for messages: the user
// info's and a password parameter's.
func Redact(url string) string {
	url = passwordParam.ReplaceAllString(url, "${1}password=xxxxx")
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok {
		return url
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return url
	}
	user, _, hasPass := strings.Cut(rest[:at], ":")
	if !hasPass {
		return url
	}
	return scheme + "://" + user + ":xxxxx" + rest[at:]
}
