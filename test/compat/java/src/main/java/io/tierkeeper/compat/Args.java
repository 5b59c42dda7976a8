package io.tierkeeper.compat;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/** Minimal "--key value" / "--key=value" / "--flag" parser that rejects unknown keys. */
final class Args {
    private final Map<String, String> values = new LinkedHashMap<>();
    private final Set<String> used = new TreeSet<>();

    static final class UsageException extends RuntimeException {
        UsageException(String msg) {
            super(msg);
        }
    }

    static Args parse(String[] argv, int from) {
        Args a = new Args();
        for (int i = from; i < argv.length; i++) {
            String s = argv[i];
            if (!s.startsWith("--")) {
                throw new UsageException("unexpected argument " + s);
            }
            String k = s.substring(2);
            String v;
            int eq = k.indexOf('=');
            if (eq >= 0) {
                v = k.substring(eq + 1);
                k = k.substring(0, eq);
            } else if (i + 1 < argv.length && !argv[i + 1].startsWith("--")) {
                v = argv[++i];
            } else {
                v = "true";
            }
            a.values.put(k, v);
        }
        return a;
    }

    String str(String k, String def) {
        used.add(k);
        String v = values.get(k);
        return v == null ? def : v;
    }

    String req(String k) {
        String v = str(k, null);
        if (v == null || v.isEmpty()) {
            throw new UsageException("missing --" + k);
        }
        return v;
    }

    int intv(String k, int def) {
        String v = str(k, null);
        try {
            return v == null ? def : Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new UsageException("--" + k + ": not an integer: " + v);
        }
    }

    long longv(String k, long def) {
        String v = str(k, null);
        try {
            return v == null ? def : Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new UsageException("--" + k + ": not an integer: " + v);
        }
    }

    /** A required non-negative integer (a ledger id). */
    long id(String k) {
        long v = longv(k, -1);
        if (v < 0) {
            throw new UsageException("missing --" + k);
        }
        return v;
    }

    boolean bool(String k) {
        String v = str(k, "false");
        if (!v.equals("true") && !v.equals("false")) {
            throw new UsageException("--" + k + ": want true or false, got " + v);
        }
        return v.equals("true");
    }

    List<String> list(String k, String def) {
        List<String> out = new ArrayList<>();
        String v = str(k, def);
        if (v == null) {
            return out;
        }
        for (String p : v.split(",")) {
            if (!p.isBlank()) {
                out.add(p.trim());
            }
        }
        return out;
    }

    /** "key=value,..." as an ordered map; empty when absent. */
    Map<String, String> keyValues(String k) {
        Map<String, String> m = new LinkedHashMap<>();
        for (String kv : list(k, null)) {
            int eq = kv.indexOf('=');
            if (eq <= 0) {
                throw new UsageException("--" + k + " wants key=value, got " + kv);
            }
            m.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        return m;
    }

    /** Fails on keys nobody asked for (typos). Call after reading every option. */
    void done() {
        for (String k : values.keySet()) {
            if (!used.contains(k)) {
                throw new UsageException("unknown option --" + k);
            }
        }
    }
}
