package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// hasPassword finds a password in every connection string form pgx
// accepts; the multi-host URL got through before.
func TestHasPassword(t *testing.T) {
	tests := []struct {
		dsn  string
		want bool
	}{
		{"postgres://op:pw@db.example/app", true},
		{"postgresql://op:pw@db.example/app", true},
		{"POSTGRES://op:pw@db.example/app", true},
		{"postgres://op:pw@[::1]:1,127.0.0.1:1/db", true},
		{"postgres://op:pw@[::1]:5432/db", true},
		{"postgres://op:pw@db1:5432,db2:5432/app?target_session_attrs=read-write", true},
		{"postgres://op:@db.example/app", true}, // an empty password is still one given
		{"postgres://op:p%40ss@db.example/app", true},
		{"postgres://op:p@ss@db.example/app", true},
		{"postgres://db.example/app?user=op&password=pw", true},
		{"postgres://db.example/app?sslmode=require&PASSWORD=pw", true},
		{"postgres://db.example/app?pass%77ord=pw", true},
		{"postgres://[::1]:1,127.0.0.1:1/db?password=pw", true},
		{"host=db.example user=op password=pw dbname=app", true},
		{"password=pw host=db.example", true},
		{"host=db.example password = 'p w'", true},
		{"host=db.example\tPassword=pw", true},

		{"postgres://op@db.example/app", false},
		{"postgres://op@[::1]:1,127.0.0.1:1/db", false},
		{"postgres://[::1]:5432/db", false},
		{"postgresql:///app?host=/var/run/postgresql", false},
		{"postgres://db.example/app?passfile=/home/op/.pgpass", false},
		{"postgres://op@db.example/app#password=x", false},
		{"host=db.example user=op dbname=app", false},
		{"host=db.example passfile=/home/op/.pgpass", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.dsn, func(t *testing.T) {
			assert.Equal(t, tt.want, hasPassword(tt.dsn))
		})
	}
}

// A database URL with a password is refused on the command line in the
// multi-host form too, without echo.
func TestDatabaseURLPasswordOnArgvMultiHost(t *testing.T) {
	f := setup(t)
	r := f.run("payout", "queue", "list", "--database-url", "postgres://op:Sup3rSecretPw@[::1]:1,127.0.0.1:1/db")
	assert.Equal(t, exitUsage, r.code, r.stderr)
	assert.Contains(t, r.stderr, "carries a password")
	assert.NotContains(t, r.stderr, "Sup3rSecretPw")
}

// FuzzHasPassword: a password in the user info or the query of a URL, or
// a key/value password setting, is always found, whatever surrounds it.
func FuzzHasPassword(f *testing.F) {
	f.Add("op", "pw", "[::1]:1,127.0.0.1:1")
	f.Add("o%40p", "", "db")
	f.Fuzz(func(t *testing.T, user, pw, hosts string) {
		if strings.ContainsAny(user+hosts, "@/?#") || strings.ContainsAny(pw, "/?#") {
			return // not the parts of a URL's authority
		}
		assert.True(t, hasPassword("postgres://"+user+":"+pw+"@"+hosts+"/db"))
		assert.True(t, hasPassword("postgresql://"+hosts+"/db?sslmode=disable&password="+pw))
		assert.True(t, hasPassword("host="+hosts+" password="+pw))
	})
}
