package store

import (
	"context"
	"testing"

	"github.com/wardenmcp/warden/internal/testing/pgtest"
)

// Every connection to PostgreSQL carries the settings that make the server
// drop a silent client's transaction and notice a dead client (over TCP);
// one the URL sets is left as the URL says.
func TestPostgresSessionParams(t *testing.T) {
	pg := pgtest.Start(t, pgtest.Options{TCP: true})
	st, err := Open(context.Background(), Options{URL: pg.TCPURL() + "&tcp_keepalives_count=7", Key: "a key for the tests, long enough"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	want := map[string]string{"idle_in_transaction_session_timeout": "15s", // as SHOW says it
		"tcp_keepalives_idle": "10", "tcp_keepalives_interval": "5", "tcp_keepalives_count": "7",
		"tcp_user_timeout": "25000"} // ms
	for k, v := range want {
		var got string
		if err := st.(*pgStore).pool.QueryRow(context.Background(), `select current_setting($1)`, k).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != v {
			t.Errorf("%s = %s, want %s", k, got, v)
		}
	}
}
