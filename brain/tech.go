package brain

import (
	"sort"
	"strings"
)

// tech is a technology a decision can choose and an action can bring in:
// its category (two technologies of one category exclude each other) and
// the names it goes by — in prose, as a package in any ecosystem, as a
// URL scheme or a command.
type tech struct {
	name     string
	category string
	aliases  []string
}

// techs is the table the first pass knows. Aliases are matched as whole
// tokens (see tokens), lower case; a package path matches when one of its
// path segments, or the whole path, is an alias.
var techs = []tech{
	{"postgres", "database", []string{"postgres", "postgresql", "psycopg", "psycopg2", "psycopg2-binary", "psycopg-binary", "asyncpg", "pg", "pgx", "lib/pq", "pq", "tokio-postgres", "pg-promise", "postgres://", "postgresql://", "psql", "libpq", "pgbouncer", "node-postgres"}},
	{"mysql", "database", []string{"mysql", "mysql-connector", "mysql-connector-python", "mysqlclient", "pymysql", "mysql2", "go-sql-driver/mysql", "mariadb", "aiomysql", "mysql://", "mysqldump", "mysqld"}},
	{"sqlite", "database", []string{"sqlite", "sqlite3", "better-sqlite3", "go-sqlite3", "mattn/go-sqlite3", "modernc.org/sqlite", "rusqlite", "aiosqlite", "sqlite://"}},
	{"mongodb", "database", []string{"mongodb", "mongo", "pymongo", "mongoose", "motor", "mongo-driver", "mongodb://", "mongosh"}},
	{"dynamodb", "database", []string{"dynamodb"}},
	{"redis", "cache", []string{"redis", "ioredis", "redis-py", "go-redis", "redis://"}},
	{"memcached", "cache", []string{"memcached", "pymemcache", "memcache"}},
	{"sqlalchemy", "orm", []string{"sqlalchemy", "alembic"}},
	{"peewee", "orm", []string{"peewee"}},
	{"prisma", "orm", []string{"prisma", "@prisma/client"}},
	{"typeorm", "orm", []string{"typeorm"}},
	{"sequelize", "orm", []string{"sequelize"}},
	{"gorm", "orm", []string{"gorm", "gorm.io/gorm"}},
	{"django", "python-web", []string{"django"}},
	{"flask", "python-web", []string{"flask"}},
	{"fastapi", "python-web", []string{"fastapi"}},
	{"express", "node-web", []string{"express"}},
	{"koa", "node-web", []string{"koa"}},
	{"fastify", "node-web", []string{"fastify"}},
	{"gin", "go-web", []string{"gin", "gin-gonic/gin"}},
	{"echo", "go-web", []string{"labstack/echo"}},
	{"chi", "go-web", []string{"go-chi/chi", "chi"}},
	{"fiber", "go-web", []string{"gofiber/fiber"}},
	{"pytest", "python-test", []string{"pytest"}},
	{"nose", "python-test", []string{"nose", "nose2"}},
	{"jest", "js-test", []string{"jest"}},
	{"mocha", "js-test", []string{"mocha"}},
	{"vitest", "js-test", []string{"vitest"}},
	{"requests", "python-http", []string{"requests"}},
	{"httpx", "python-http", []string{"httpx"}},
	{"aiohttp", "python-http", []string{"aiohttp"}},
	{"axios", "js-http", []string{"axios"}},
	{"node-fetch", "js-http", []string{"node-fetch"}},
	{"got", "js-http", []string{"got"}},
	{"react", "frontend", []string{"react", "react-dom"}},
	{"vue", "frontend", []string{"vue", "vuejs"}},
	{"svelte", "frontend", []string{"svelte"}},
	{"angular", "frontend", []string{"angular", "@angular/core"}},
	{"tailwind", "css", []string{"tailwind", "tailwindcss"}},
	{"bootstrap", "css", []string{"bootstrap"}},
	{"redux", "state", []string{"redux", "@reduxjs/toolkit"}},
	{"mobx", "state", []string{"mobx"}},
	{"zustand", "state", []string{"zustand"}},
	{"celery", "queue", []string{"celery"}},
	{"rq", "queue", []string{"rq", "python-rq"}},
	{"dramatiq", "queue", []string{"dramatiq"}},
	{"rabbitmq", "broker", []string{"rabbitmq", "pika", "amqp", "amqplib"}},
	{"kafka", "broker", []string{"kafka", "kafka-python", "confluent-kafka", "kafkajs"}},
	{"npm", "js-package-manager", []string{"npm", "package-lock.json"}},
	{"yarn", "js-package-manager", []string{"yarn", "yarn.lock"}},
	{"pnpm", "js-package-manager", []string{"pnpm", "pnpm-lock.yaml"}},
	{"pip", "python-package-manager", []string{"pip", "pip3", "requirements.txt"}},
	{"poetry", "python-package-manager", []string{"poetry", "poetry.lock"}},
	{"uv", "python-package-manager", []string{"uv", "uv.lock"}},
	{"logrus", "go-logging", []string{"logrus", "sirupsen/logrus"}},
	{"zap", "go-logging", []string{"zap", "go.uber.org/zap"}},
	{"zerolog", "go-logging", []string{"zerolog", "rs/zerolog"}},
	{"slog", "go-logging", []string{"slog", "log/slog"}},
	{"jwt", "auth", []string{"jwt", "pyjwt", "jsonwebtoken", "golang-jwt/jwt"}},
	{"sessions", "auth", []string{"server-side sessions", "express-session", "flask-session"}},
	{"graphql", "api-style", []string{"graphql", "graphene", "apollo-server", "gqlgen"}},
	{"rest", "api-style", []string{"rest", "restful"}},
	{"grpc", "rpc", []string{"grpc", "grpcio", "google.golang.org/grpc"}},
}

// aliasIndex maps an alias to the technologies it names.
var aliasIndex = func() map[string][]int {
	m := map[string][]int{}
	for i, t := range techs {
		for _, a := range t.aliases {
			m[a] = append(m[a], i)
		}
	}
	return m
}()

// packageOnly are aliases too common as words to be read in prose: they
// name a technology only as a package (a manifest's entry, an install).
var packageOnly = map[string]bool{
	"pg": true, "pq": true, "got": true, "gin": true, "chi": true, "motor": true, "uv": true,
	"rq": true, "zap": true, "rest": true, "restful": true, "requests": true, "express": true,
	"koa": true, "react": true, "vue": true, "slog": true, "nose": true, "mocha": true,
	"pip": true, "npm": true, "yarn": true, "rust": true, "echo": true, "jest": true,
}

// techByName finds a technology's index, -1 if none.
func techByName(name string) int {
	for i, t := range techs {
		if t.name == name {
			return i
		}
	}
	return -1
}

// tokens splits text into lower-case tokens: runs of letters, digits and
// the characters a package name holds (- _ . / @ :), with trailing
// punctuation trimmed. Consecutive pairs are returned too, so that
// two-word aliases match.
func tokens(text string) []string {
	text = strings.ToLower(text)
	f := strings.FieldsFunc(text, func(r rune) bool {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return false
		case r == '-' || r == '_' || r == '.' || r == '/' || r == '@' || r == ':':
			return false
		}
		return true
	})
	out := make([]string, 0, 2*len(f))
	for i, w := range f {
		w = strings.TrimRight(w, ".:/-_")
		w = strings.TrimLeft(w, ".:/-_")
		if w == "" {
			continue
		}
		out = append(out, w)
		if i > 0 {
			out = append(out, strings.TrimRight(f[i-1], ".:/-_")+" "+w)
		}
	}
	return out
}

// techsIn returns the technologies text mentions, as sorted indexes. In
// prose, the aliases of packageOnly are not read.
// A token matches an alias whole; a URL (scheme://…) matches its scheme;
// a package path (a/b/c, @scope/x) matches when the path or one of its
// segments is an alias; a package with a version or extras
// (psycopg2>=2.9, mysql-connector-python[extra]) is read as its name.
func techsIn(text string, prose bool) []int {
	seen := map[int]bool{}
	add := func(s string) bool {
		if prose && packageOnly[s] {
			return false
		}
		ids, ok := aliasIndex[s]
		for _, i := range ids {
			seen[i] = true
		}
		return ok
	}
	for _, tok := range tokens(text) {
		if add(tok) {
			continue
		}
		if i := strings.Index(tok, "://"); i > 0 {
			add(tok[:i+3])
			continue
		}
		name := packageName(tok)
		if name != tok && add(name) {
			continue
		}
		if j := strings.IndexByte(name, '.'); j > 0 && !strings.Contains(name, "/") && add(name[:j]) {
			continue // a module path: fastapi.testclient, sqlite3.connect
		}
		if strings.Contains(name, "/") {
			for _, seg := range strings.Split(name, "/") {
				if add(seg) {
					break
				}
			}
			continue
		}
		// a name built on an alias: mysql-connector-python-rf, psycopg2-pool.
		if j := strings.IndexAny(name, "-_"); j > 0 {
			add(name[:j])
		}
	}
	out := make([]int, 0, len(seen))
	for i := range seen {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

// packageName strips a version, extras or a marker from a package
// requirement ("psycopg2-binary==2.9.9" → "psycopg2-binary").
func packageName(s string) string {
	if i := strings.IndexAny(s, "=<>!~[;@ "); i > 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}
