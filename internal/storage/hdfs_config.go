package storage

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"slices"
	"strings"
	"time"

	"github.com/colinmarc/hdfs/v2/hadoopconf"
	krb "github.com/jcmturner/gokrb5/v8/client"
	krbconfig "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/credentials"
	"github.com/jcmturner/gokrb5/v8/keytab"
)

// HDFSOptions configures an HDFS file system.
type HDFSOptions struct {
	// URI names the cluster: hdfs://nn:8020, hdfs://nameservice (resolved
	// through dfs.ha.namenodes.* in the Hadoop configuration) or hdfs:///
	// (fs.defaultFS). A path part is ignored.
	URI string
	// Addresses, if set, are the namenode host:port addresses to use instead
	// of resolving URI's authority.
	Addresses []string
	// HadoopConfDir holds core-site.xml and hdfs-site.xml; empty means
	// $HADOOP_CONF_DIR, then $HADOOP_HOME/conf, then none.
	HadoopConfDir string
	// User is the HDFS user to act as with simple authentication; empty
	// means $HADOOP_USER_NAME, then the OS user. The library cannot act as a
	// proxy user, so User together with Kerberos (where the principal is the
	// user) is refused.
	User string
	// Kerberos, if set, authenticates with a keytab or a ticket cache.
	Kerberos *KerberosOptions
	// DialTimeout bounds connecting to a namenode or datanode (default 10s).
	DialTimeout time.Duration
	// RPCTimeout bounds each call when the context has no earlier deadline
	// (default 60s).
	RPCTimeout time.Duration
	// Connections is how many namenode connections calls run on at once
	// (default DefaultConnections): the library's connection answers one
	// call at a time, so executing a plan over many items waits on round
	// trips, not on the namenode, with fewer.
	Connections int
	// ListBatchSize is the number of entries per listing call (default 1000,
	// the namenode's dfs.ls.limit; smaller values cost extra calls).
	ListBatchSize int
	// Guard decides where writes, renames and deletes are allowed.
	Guard *Guard

	// connectOnly skips the startup question to the namenode (connecting
	// is still checked); for tests of servers that never answer.
	connectOnly bool
}

// KerberosOptions selects Kerberos credentials: a keytab when Keytab is set,
// otherwise the ticket cache.
type KerberosOptions struct {
	// Krb5Conf is the krb5.conf path; empty means $KRB5_CONFIG, then
	// /etc/krb5.conf.
	Krb5Conf string
	// Principal is user@REALM (the realm defaults to krb5.conf's
	// default_realm); required with Keytab.
	Principal string
	Keytab    string
	// CCache is the ticket cache path; empty means $KRB5CCNAME, then
	// /tmp/krb5cc_<uid>.
	CCache string
	// ServicePrincipal is the namenode's principal without realm, e.g.
	// nn/_HOST; empty means dfs.namenode.kerberos.principal.
	ServicePrincipal string
}

const (
	defaultDialTimeout  = 10 * time.Second
	defaultRPCTimeout   = 60 * time.Second
	defaultListBatch    = 1000
	defaultNamenodePort = "8020"
)

// DefaultConnections is how many namenode connections an HDFS value keeps
// unless told otherwise, and MaxConnections the most it accepts: a
// namenode serves each connection's calls on its handler threads
// (dfs.namenode.handler.count, 10 by default), which a few per worker do
// not crowd.
const (
	DefaultConnections = 4
	MaxConnections     = 32
)

// namenodeAddresses resolves an hdfs URI authority to namenode addresses
// the way the Hadoop client does: host:port as is; a nameservice through
// dfs.ha.namenodes.<ns> and dfs.namenode.rpc-address.<ns>.<nn>, or
// dfs.namenode.rpc-address.<ns> for a single namenode; an empty authority
// through fs.defaultFS; otherwise a host on the default port 8020.
func namenodeAddresses(conf hadoopconf.HadoopConf, authority string) ([]string, error) {
	if authority == "" {
		def := conf["fs.defaultFS"]
		if def == "" {
			def = conf["fs.default.name"]
		}
		u, err := ParseURI(def)
		if def == "" || err != nil || u.Scheme != "hdfs" || u.Authority == "" {
			return nil, fmt.Errorf("hdfs URI has no authority and fs.defaultFS (%q) names no hdfs cluster; use hdfs://<nameservice or host:port>/path", def)
		}
		authority = u.Authority
	}
	if _, port, err := net.SplitHostPort(authority); err == nil && port != "" {
		return []string{authority}, nil
	}
	if nns := conf["dfs.ha.namenodes."+authority]; nns != "" {
		var addrs []string
		for _, nn := range strings.Split(nns, ",") {
			nn = strings.TrimSpace(nn)
			if nn == "" {
				continue
			}
			key := "dfs.namenode.rpc-address." + authority + "." + nn
			addr := conf[key]
			if addr == "" {
				return nil, fmt.Errorf("nameservice %q lists namenode %q but %s is not set", authority, nn, key)
			}
			addrs = append(addrs, addr)
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("nameservice %q: dfs.ha.namenodes.%s lists no namenodes", authority, authority)
		}
		return addrs, nil
	}
	if addr := conf["dfs.namenode.rpc-address."+authority]; addr != "" {
		return []string{addr}, nil
	}
	return []string{net.JoinHostPort(authority, defaultNamenodePort)}, nil
}

func loadHadoopConf(dir string) (hadoopconf.HadoopConf, error) {
	var (
		conf hadoopconf.HadoopConf
		err  error
	)
	if dir != "" {
		conf, err = hadoopconf.Load(dir)
	} else {
		conf, err = hadoopconf.LoadFromEnvironment()
	}
	if err != nil {
		return nil, fmt.Errorf("hadoop configuration: %w", err)
	}
	if conf == nil {
		conf = hadoopconf.HadoopConf{}
	}
	return conf, nil
}

func hdfsUser(opt string) (string, error) {
	if opt != "" {
		return opt, nil
	}
	if u := os.Getenv("HADOOP_USER_NAME"); u != "" {
		return u, nil
	}
	u, err := user.Current()
	if err != nil {
		return "", fmt.Errorf("no HDFS user given and the OS user is unknown: %w", err)
	}
	return u.Username, nil
}

// KerberosSettingError is a Kerberos setting that cannot be used, found
// without asking the KDC. Field is the setting's name in KerberosOptions'
// configuration terms (krb5Conf, principal, keytab, ccache), so callers
// can name it as their users know it.
type KerberosSettingError struct {
	Field string
	Err   error
}

func (e *KerberosSettingError) Error() string { return e.Err.Error() }
func (e *KerberosSettingError) Unwrap() error { return e.Err }

// CheckKerberos runs every check of k that needs no KDC and returns every
// problem: krb5.conf loads, the principal has a realm, the keytab loads
// and holds a key of the principal, or the ticket cache loads. NewHDFS
// runs the same checks before it logs in, so a setting this passes is
// refused at start only by the KDC or the cluster.
func CheckKerberos(k *KerberosOptions) []*KerberosSettingError {
	_, errs := kerberosSetup(k)
	return errs
}

// kerberosCreds is what a login needs, read from the local files.
type kerberosCreds struct {
	cfg         *krbconfig.Config
	name, realm string
	keytab      *keytab.Keytab
	ccache      *credentials.CCache
	ccPath      string
}

// kerberosSetup reads krb5.conf and the keytab or the ticket cache.
func kerberosSetup(k *KerberosOptions) (kerberosCreds, []*KerberosSettingError) {
	var c kerberosCreds
	var errs []*KerberosSettingError
	bad := func(field string, format string, args ...any) {
		errs = append(errs, &KerberosSettingError{Field: field, Err: fmt.Errorf(format, args...)})
	}
	// A keytab or ticket cache that cannot be used is who we are being
	// refused; krb5.conf, the principal's spelling or a cache type this
	// client cannot read are setup errors.
	refused := func(field string, format string, args ...any) {
		errs = append(errs, &KerberosSettingError{Field: field, Err: newError("login", "", ErrAuthentication, fmt.Errorf(format, args...))})
	}
	cfgPath, from := k.Krb5Conf, ""
	if cfgPath == "" {
		cfgPath, from = os.Getenv("KRB5_CONFIG"), " (from $KRB5_CONFIG)"
	}
	if cfgPath == "" {
		cfgPath, from = "/etc/krb5.conf", " (the default when krb5Conf and $KRB5_CONFIG are unset)"
	}
	cfg, err := krbconfig.Load(cfgPath)
	if err != nil {
		bad("krb5Conf", "kerberos: krb5.conf %s%s: %w", cfgPath, from, err)
	} else {
		c.cfg = cfg
	}
	if k.Keytab != "" {
		name, realm, _ := strings.Cut(k.Principal, "@")
		if realm == "" && c.cfg != nil {
			realm = c.cfg.LibDefaults.DefaultRealm
		}
		switch {
		case k.Principal == "":
			bad("principal", "kerberos: the principal (user@REALM) is required with a keytab")
		case name == "" || (realm == "" && c.cfg != nil):
			bad("principal", "kerberos: principal %q: want user@REALM or a krb5.conf default_realm", k.Principal)
		}
		c.name, c.realm = name, realm
		kt, err := keytab.Load(k.Keytab)
		switch {
		case err != nil && name != "" && realm != "":
			refused("keytab", "kerberos principal %s@%s (realm %s): keytab %s cannot be read: %w", name, realm, realm, k.Keytab, err)
		case err != nil:
			refused("keytab", "kerberos: keytab %s cannot be read: %w", k.Keytab, err)
		case name != "" && realm != "":
			if held := keytabPrincipals(kt); !slices.Contains(held, name+"@"+realm) {
				refused("keytab", "kerberos principal %s@%s (realm %s): keytab %s holds no key of it (it holds %s): use the principal's keytab",
					name, realm, realm, k.Keytab, heldText(held))
			}
		}
		c.keytab = kt
		errs = append(errs, c.checkKDC(cfgPath, realm)...)
		return c, errs
	}
	ccPath := k.CCache
	if ccPath == "" {
		ccPath = os.Getenv("KRB5CCNAME")
	}
	if rest, ok := strings.CutPrefix(ccPath, "FILE:"); ok {
		ccPath = rest
	} else if strings.Contains(ccPath, ":") {
		bad("ccache", "kerberos: ticket cache %q: only FILE: caches are supported", ccPath)
		return c, errs
	}
	if ccPath == "" {
		ccPath = fmt.Sprintf("/tmp/krb5cc_%d", os.Getuid())
	}
	c.ccPath = ccPath
	cc, err := credentials.LoadCCache(ccPath)
	if err != nil {
		refused("ccache", "kerberos: no ticket: ticket cache %s: %w (run kinit, or configure a keytab and principal)", ccPath, err)
		return c, errs
	}
	c.ccache = cc
	errs = append(errs, c.checkKDC(cfgPath, cc.DefaultPrincipal.Realm)...)
	return c, errs
}

// checkKDC refuses a krb5.conf that names no KDC of realm when DNS may
// not be asked (dns_lookup_kdc off, the default): every login would fail.
// It asks no DNS.
func (c kerberosCreds) checkKDC(cfgPath, realm string) []*KerberosSettingError {
	if c.cfg == nil || realm == "" || c.cfg.LibDefaults.DNSLookupKDC {
		return nil
	}
	if _, _, err := c.cfg.GetKDCs(realm, true); err != nil {
		return []*KerberosSettingError{{Field: "krb5Conf", Err: fmt.Errorf("kerberos: krb5.conf %s names no KDC of realm %s and dns_lookup_kdc is off: add [realms] %s = { kdc = host:88 }", cfgPath, realm, realm)}}
	}
	return nil
}

// keytabPrincipals lists the principals a keytab holds keys of, sorted.
func keytabPrincipals(kt *keytab.Keytab) []string {
	var out []string
	for _, e := range kt.Entries {
		if p := strings.Join(e.Principal.Components, "/") + "@" + e.Principal.Realm; !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

func heldText(held []string) string {
	if len(held) == 0 {
		return "no keys"
	}
	return "keys of " + strings.Join(held, ", ")
}

// kerberosLogin logs in with what kerberosSetup read: with a keytab it
// asks the KDC; a ticket cache already holds the ticket. Failures are
// ErrAuthentication and name the principal and realm (or the ticket
// cache) they were about.
func kerberosLogin(c kerberosCreds, keytabPath string) (*krb.Client, error) {
	if c.keytab != nil {
		cl := krb.NewWithKeytab(c.name, c.realm, c.keytab, c.cfg, krb.DisablePAFXFAST(true))
		if err := cl.Login(); err != nil {
			return nil, newError("login", "", ErrAuthentication, fmt.Errorf("kerberos principal %s@%s (realm %s) with keytab %s: %w", c.name, c.realm, c.realm, keytabPath, err))
		}
		return cl, nil
	}
	cc := c.ccache
	who := cc.DefaultPrincipal.PrincipalName.PrincipalNameString() + "@" + cc.DefaultPrincipal.Realm
	cl, err := krb.NewFromCCache(cc, c.cfg, krb.DisablePAFXFAST(true))
	if err != nil {
		return nil, newError("login", "", ErrAuthentication, fmt.Errorf("kerberos principal %s (realm %s): ticket cache %s: %w (the ticket may have expired: run kinit again, or configure a keytab)", who, cc.DefaultPrincipal.Realm, c.ccPath, err))
	}
	return cl, nil
}

// dataTransferProtections are the dfs.data.transfer.protection levels this
// client can read and write blocks with. The block reader of
// github.com/colinmarc/hdfs v2.4.0 fails with integrity and privacy
// ("proto: cannot parse invalid wire-format data", seen against Hadoop
// 3.4.1), so those are refused at startup instead of at the first read.
var dataTransferProtections = map[string]bool{"": true, "authentication": true}

func checkDataTransferProtection(conf map[string]string) error {
	v := strings.ToLower(strings.TrimSpace(conf["dfs.data.transfer.protection"]))
	for _, level := range strings.Split(v, ",") {
		if !dataTransferProtections[strings.TrimSpace(level)] {
			return fmt.Errorf("dfs.data.transfer.protection=%q: this client reads blocks only with authentication (the HDFS library fails on integrity and privacy); valid: authentication or unset", v)
		}
	}
	if strings.EqualFold(conf["dfs.encrypt.data.transfer"], "true") {
		return errors.New("dfs.encrypt.data.transfer=true: encrypted block transfer is privacy, which this client cannot read; valid: false or unset, with dfs.data.transfer.protection=authentication")
	}
	return nil
}
