package store

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
)

// A sealed value: magic, the sealing key's id, a nonce, then AES-256-GCM
// ciphertext whose additional data is the bucket and key, so that a sealed
// value copied to another record does not open. Without a key a secret is
// kept as plainMagic and the value: marked, so that a copy into a shared
// store (Copy) or a key set later (Rekey) seals it.
var (
	sealMagic  = []byte("wsk1")
	plainMagic = []byte("wsp0")
)

const keyIDLen = 4

type sealer struct {
	id   []byte
	aead cipher.AEAD
	old  map[string]cipher.AEAD // key id → AEAD, the current key's too
}

// newSealer derives AES-256 keys from key and oldKeys (SHA-256 of each); nil
// without a key.
func newSealer(key string, oldKeys []string) (*sealer, error) {
	if key == "" {
		if len(oldKeys) > 0 {
			return nil, errors.New("old store keys given without a current storeKey")
		}
		return nil, nil
	}
	if len(key) < 16 {
		return nil, errors.New("storeKey is too short: give at least 16 characters of random data (e.g. openssl rand -base64 32)")
	}
	s := &sealer{old: map[string]cipher.AEAD{}}
	for i, k := range append([]string{key}, oldKeys...) {
		sum := sha256.Sum256([]byte(k))
		block, err := aes.NewCipher(sum[:])
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		id := sha256.Sum256(sum[:])
		if i == 0 {
			s.id, s.aead = id[:keyIDLen], aead
		}
		if _, dup := s.old[string(id[:keyIDLen])]; !dup {
			s.old[string(id[:keyIDLen])] = aead
		}
	}
	return s, nil
}

func additional(bucket string, key []byte) []byte {
	return append(append([]byte(bucket), 0), key...)
}

// seal returns value sealed for bucket and key; value itself without a key.
func (s *sealer) seal(bucket string, key, value []byte) []byte {
	if s == nil {
		return append(bytes.Clone(plainMagic), value...)
	}
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	out := append(append(append([]byte{}, sealMagic...), s.id...), nonce...)
	return s.aead.Seal(out, nonce, value, additional(bucket, key))
}

// open undoes seal. A value that was never sealed (written before a key was
// set) reads as it is.
func (s *sealer) open(bucket string, key, value []byte) ([]byte, error) {
	if bytes.HasPrefix(value, plainMagic) {
		return value[len(plainMagic):], nil
	}
	if value == nil || !Sealed(value) {
		return value, nil // written before secrets were marked
	}
	if s == nil {
		return nil, fmt.Errorf("%s: the value is sealed and no storeKey is set: give Warden the storeKey it was written with", bucket)
	}
	id, rest := value[len(sealMagic):len(sealMagic)+keyIDLen], value[len(sealMagic)+keyIDLen:]
	aead := s.old[string(id)]
	if aead == nil {
		return nil, fmt.Errorf("%s: the value is sealed under another storeKey: give Warden that key (or run warden store rotate-key with it as the old key)", bucket)
	}
	if len(rest) < aead.NonceSize() {
		return nil, fmt.Errorf("%s: a sealed value is truncated", bucket)
	}
	plain, err := aead.Open(nil, rest[:aead.NonceSize()], rest[aead.NonceSize():], additional(bucket, key))
	if err != nil {
		return nil, fmt.Errorf("%s: a sealed value does not open: it was altered or moved", bucket)
	}
	return plain, nil
}

// current reports whether value is sealed under the current key.
func (s *sealer) current(value []byte) bool {
	return s != nil && Sealed(value) && bytes.Equal(value[len(sealMagic):len(sealMagic)+keyIDLen], s.id)
}

// secret reports whether value was written by PutSecret.
func secret(value []byte) bool { return Sealed(value) || bytes.HasPrefix(value, plainMagic) }

// Sealed reports whether value is a sealed value.
func Sealed(value []byte) bool {
	return len(value) > len(sealMagic)+keyIDLen && bytes.HasPrefix(value, sealMagic)
}

// sealedTx adds the secret operations to a backend's transaction.
type sealedTx struct {
	rawTx
	s *sealer
}

// rawTx is what a backend implements: Tx without the secret operations.
type rawTx interface {
	Get(bucket string, key []byte) ([]byte, error)
	Put(bucket string, key, value []byte) error
	Delete(bucket string, key []byte) error
	Scan(bucket string, prefix []byte, reverse bool, fn func(k, v []byte) error) error
	Count(bucket string) (int, error)
	Buckets(parent string, fn func(name string) error) error
	DeleteBucket(bucket string) error
	Lock(name string) error
	Publish(topic string, msg []byte) error
	Alive(instance string) (bool, error)
}

func (t sealedTx) PutSecret(bucket string, key, value []byte) error {
	return t.Put(bucket, key, t.s.seal(bucket, key, value))
}

func (t sealedTx) GetSecret(bucket string, key []byte) ([]byte, error) {
	v, err := t.Get(bucket, key)
	if err != nil {
		return nil, err
	}
	return t.s.open(bucket, key, v)
}
