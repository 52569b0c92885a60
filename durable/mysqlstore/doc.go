// Package mysqlstore is a store.Store on MySQL or MariaDB.
package mysqlstore
