package config

import "slices"

// ClusterExecute values of [cluster] execute: where a server whose runs
// are in PostgreSQL carries out their work.
var ClusterExecutes = []string{"here", "workers"}

// ClusterConfig is the [cluster] table (docs/cluster.md): runs kept in
// PostgreSQL, so that several apservers see the same runs.
type ClusterConfig struct {
	// DatabaseURL is the PostgreSQL database ("" keeps runs in the
	// embedded SQLite store, the default). The environment's
	// APSERVER_DATABASE_URL is used when the files set none.
	DatabaseURL string
	// Execute is "here" (this process carries out its runs' work, the log
	// is in PostgreSQL) or "workers" (the work is enqueued for apserver
	// workers).
	Execute string
}

// fileCluster mirrors [cluster].
type fileCluster struct {
	DatabaseURL *string `toml:"database_url"`
	Execute     *string `toml:"execute"`
}

// mergeCluster applies [cluster] from a file. Where runs are stored and
// where their work goes is the user's choice, never a project's: a
// project's database would see the user's code and decide its runs.
func (c *Config) mergeCluster(f *fileCluster, bad func(key, format string, args ...any) error, may func(key string, value any, loosens bool) bool) error {
	if f == nil {
		return nil
	}
	if f.DatabaseURL != nil && may("cluster.database_url", "(a database)", *f.DatabaseURL != c.Cluster.DatabaseURL) {
		c.Cluster.DatabaseURL = *f.DatabaseURL
	}
	if f.Execute != nil {
		if !slices.Contains(ClusterExecutes, *f.Execute) {
			return bad("cluster.execute", "%q is not one of %s", *f.Execute, quoteAll(ClusterExecutes))
		}
		if may("cluster.execute", *f.Execute, *f.Execute != c.Cluster.Execute) {
			c.Cluster.Execute = *f.Execute
		}
	}
	return nil
}
