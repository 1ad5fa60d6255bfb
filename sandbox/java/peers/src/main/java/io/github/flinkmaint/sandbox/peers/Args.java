package io.github.flinkmaint.sandbox.peers;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** Minimal "--name value" / "--flag" parser that names the bad argument in its errors. */
final class Args {
    private final Map<String, List<String>> values = new HashMap<>();

    private Args() {}

    static Args parse(String[] argv, Set<String> valued, Set<String> flags) {
        Args a = new Args();
        for (int i = 0; i < argv.length; i++) {
            String arg = argv[i];
            if (!arg.startsWith("--")) {
                throw new IllegalArgumentException(
                        "unexpected argument '" + arg + "'; valid options: " + valued + " (with a value), " + flags);
            }
            String name = arg.substring(2);
            if (flags.contains(name)) {
                a.values.computeIfAbsent(name, k -> new ArrayList<>()).add("true");
            } else if (valued.contains(name)) {
                if (i + 1 >= argv.length) {
                    throw new IllegalArgumentException("option --" + name + " needs a value");
                }
                a.values.computeIfAbsent(name, k -> new ArrayList<>()).add(argv[++i]);
            } else {
                throw new IllegalArgumentException(
                        "unknown option --" + name + "; valid options: " + valued + " (with a value), " + flags);
            }
        }
        return a;
    }

    String required(String name) {
        List<String> v = values.get(name);
        if (v == null || v.isEmpty()) {
            throw new IllegalArgumentException("option --" + name + " is required");
        }
        return v.get(v.size() - 1);
    }

    String get(String name, String fallback) {
        List<String> v = values.get(name);
        return v == null || v.isEmpty() ? fallback : v.get(v.size() - 1);
    }

    List<String> all(String name) {
        return values.getOrDefault(name, List.of());
    }

    boolean flag(String name) {
        return values.containsKey(name);
    }

    int intValue(String name, int fallback, int min, int max) {
        String raw = get(name, null);
        if (raw == null) {
            return fallback;
        }
        try {
            int v = Integer.parseInt(raw);
            if (v < min || v > max) {
                throw new IllegalArgumentException(
                        "option --" + name + " = " + raw + " is out of range [" + min + ", " + max + "]");
            }
            return v;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("option --" + name + " = '" + raw + "' is not an integer", e);
        }
    }

    long longValue(String name, long fallback, long min) {
        String raw = get(name, null);
        if (raw == null) {
            return fallback;
        }
        try {
            long v = Long.parseLong(raw);
            if (v < min) {
                throw new IllegalArgumentException("option --" + name + " = " + raw + " must be >= " + min);
            }
            return v;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("option --" + name + " = '" + raw + "' is not an integer", e);
        }
    }
}
