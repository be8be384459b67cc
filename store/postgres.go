package store

import (
	"context"
	"errors"
)

func openPostgres(ctx context.Context, url, instance string, seal *sealer) (Store, error) {
	return nil, errors.New("postgres: not built yet")
}
