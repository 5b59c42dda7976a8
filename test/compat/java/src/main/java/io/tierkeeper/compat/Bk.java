package io.tierkeeper.compat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.bookkeeper.client.BookKeeper;
import org.apache.bookkeeper.client.BookKeeperAdmin;
import org.apache.bookkeeper.client.api.DigestType;
import org.apache.bookkeeper.client.api.LedgerEntries;
import org.apache.bookkeeper.client.api.LedgerEntry;
import org.apache.bookkeeper.client.api.LedgerMetadata;
import org.apache.bookkeeper.client.api.ReadHandle;
import org.apache.bookkeeper.client.api.WriteHandle;
import org.apache.bookkeeper.conf.ClientConfiguration;
import org.apache.bookkeeper.net.BookieId;

/** BookKeeper client subcommands: write-ledgers, read-ledger-bench, ledger-metadata. */
final class Bk {
    private Bk() {}

    static final String DEFAULT_PASSWORD = "tierkeeper-pw";

    /** --zk ADDR [--ledgers-root /ledgers] or --metadata-uri URI. */
    static String metadataUri(Args a) {
        String uri = a.str("metadata-uri", null);
        String root = a.str("ledgers-root", "/ledgers");
        if (uri != null) {
            return uri;
        }
        return "zk+hierarchical://" + a.req("zk") + root;
    }

    static ClientConfiguration clientConf(String uri, boolean v2) {
        ClientConfiguration c = new ClientConfiguration();
        c.setMetadataServiceUri(uri);
        c.setZkTimeout(10000);
        c.setUseV2WireProtocol(v2);
        c.setAddEntryTimeout(60);
        c.setReadEntryTimeout(60);
        return c;
    }

    static BookKeeper client(String uri, boolean v2) throws Exception {
        return new BookKeeper(clientConf(uri, v2));
    }

    static DigestType digest(String name) {
        return switch (name.toUpperCase(Locale.ROOT)) {
            case "CRC32" -> DigestType.CRC32;
            case "MAC", "HMAC" -> DigestType.MAC;
            case "CRC32C" -> DigestType.CRC32C;
            case "DUMMY" -> DigestType.DUMMY;
            default -> throw new Args.UsageException("unknown digest type " + name + " (CRC32, MAC, CRC32C, DUMMY)");
        };
    }

    interface Getter {
        Object get() throws Exception;
    }

    /** Puts k=g() unless the getter is unsupported (Pulsar's offloaded-ledger metadata lacks some). */
    private static void put(Map<String, Object> m, String k, Getter g) {
        try {
            m.put(k, g.get());
        } catch (UnsupportedOperationException e) {
            m.put(k + "Unsupported", true);
        } catch (Exception e) {
            m.put(k + "Error", e.toString());
        }
    }

    /** Ledger metadata as JSON-able map. */
    static Map<String, Object> describe(LedgerMetadata md) {
        Map<String, Object> m = new LinkedHashMap<>();
        put(m, "ledgerId", md::getLedgerId);
        put(m, "state", () -> md.getState().name());
        put(m, "closed", md::isClosed);
        put(m, "ensembleSize", md::getEnsembleSize);
        put(m, "writeQuorum", md::getWriteQuorumSize);
        put(m, "ackQuorum", md::getAckQuorumSize);
        put(m, "lastEntryId", md::getLastEntryId);
        put(m, "length", md::getLength);
        put(m, "hasPassword", md::hasPassword);
        put(m, "digestType", () -> md.getDigestType() == null ? null : md.getDigestType().name());
        put(m, "passwordHex", () -> md.hasPassword() ? HexFormat.of().formatHex(md.getPassword()) : null);
        put(m, "ctime", md::getCtime);
        put(m, "metadataFormatVersion", md::getMetadataFormatVersion);
        put(m, "ensembles", () -> {
            List<Map<String, Object>> ens = new ArrayList<>();
            for (Map.Entry<Long, ? extends List<BookieId>> e : md.getAllEnsembles().entrySet()) {
                Map<String, Object> s = new LinkedHashMap<>();
                s.put("firstEntryId", e.getKey());
                List<String> ids = new ArrayList<>();
                for (BookieId b : e.getValue()) {
                    ids.add(b.toString());
                }
                s.put("bookies", ids);
                ens.add(s);
            }
            return ens;
        });
        put(m, "customMetadata", () -> {
            Map<String, String> custom = new TreeMap<>();
            md.getCustomMetadata().forEach((k, v) -> custom.put(k, new String(v, StandardCharsets.UTF_8)));
            return custom;
        });
        return m;
    }

    // ---------------------------------------------------------------- write-ledgers

    static Object writeLedgers(Args a) throws Exception {
        String uri = metadataUri(a);
        String out = a.str("out", null);
        int entries = a.intv("entries", 24);
        long seed = a.longv("seed", 1);
        String password = a.str("password", DEFAULT_PASSWORD);
        List<String> digests = a.list("digests", "CRC32,MAC,CRC32C,DUMMY");
        int ens = a.intv("ensemble", 3);
        int wq = a.intv("write-quorum", 2);
        int aq = a.intv("ack-quorum", 2);
        boolean v2 = a.bool("v2");
        boolean ensembleChange = a.bool("ensemble-change");
        String pauseDir = a.str("pause-dir", null);
        long pauseTimeoutMs = a.longv("pause-timeout-ms", 120_000);
        String ecDigest = a.str("ensemble-change-digest", "CRC32C");
        long bigMib = a.longv("big-mib", 0);
        int bigEntrySize = a.intv("big-entry-size", 1 << 20);
        int outstanding = a.intv("outstanding", 16);
        String ensembles = a.str("ensembles", null);
        a.done();
        if (ensembleChange && pauseDir == null) {
            throw new Args.UsageException("--ensemble-change needs --pause-dir (the Go runner stops a bookie there)");
        }
        for (String d : digests) {
            digest(d);
        }
        byte[] pw = password.getBytes(StandardCharsets.UTF_8);
        long t0 = System.nanoTime();
        List<Object> ledgers = new ArrayList<>();
        ClientConfiguration conf = clientConf(uri, v2);
        if (ensembles != null) {
            conf.setEnsemblePlacementPolicy(org.apache.bookkeeper.client.ChosenEnsemblePlacementPolicy.class);
        }
        try (BookKeeper bk = new BookKeeper(conf)) {
            long ledgerSeed = seed;
            if (ensembles != null) {
                // One ledger per ensemble ("a,b;c,d"), with the first digest.
                DigestType dt = digest(digests.isEmpty() ? "CRC32C" : digests.get(0));
                for (String e : ensembles.split(";")) {
                    String[] ids = e.trim().split(",");
                    ledgers.add(writeOne(bk, dt, pw, ids.length, Math.min(wq, ids.length), Math.min(aq, ids.length),
                            ledgerSeed++, entries, null, 0, e.trim()));
                }
            } else if (bigMib > 0) {
                long n = bigMib * (1L << 20) / bigEntrySize;
                ledgers.add(writeBig(bk, digest(digests.isEmpty() ? "CRC32C" : digests.get(0)), pw, ens, wq, aq, ledgerSeed, n, bigEntrySize, outstanding));
            } else {
                for (String d : digests) {
                    ledgers.add(writeOne(bk, digest(d), pw, ens, wq, aq, ledgerSeed++, entries, null, 0, null));
                }
                if (ensembleChange) {
                    ledgers.add(writeOne(bk, digest(ecDigest), pw, ens, wq, aq, ledgerSeed++, entries, Path.of(pauseDir), pauseTimeoutMs, null));
                }
            }
        }
        Map<String, Object> res = new LinkedHashMap<>();
        res.put("metadataServiceUri", uri);
        res.put("wireProtocol", v2 ? "v2" : "v3");
        res.put("seconds", (System.nanoTime() - t0) / 1e9);
        res.put("ledgers", ledgers);
        if (out != null) {
            Tool.JSON.writeValue(Path.of(out).toFile(), res);
            Map<String, Object> summary = new LinkedHashMap<>();
            summary.put("out", out);
            summary.put("seconds", res.get("seconds"));
            List<Long> ids = new ArrayList<>();
            for (Object l : ledgers) {
                ids.add((Long) ((Map<?, ?>) l).get("ledgerId"));
            }
            summary.put("ledgerIds", ids);
            return summary;
        }
        return res;
    }

    private static WriteHandle create(BookKeeper bk, DigestType dt, byte[] pw, int ens, int wq, int aq, String purpose) throws Exception {
        return create(bk, dt, pw, ens, wq, aq, purpose, null);
    }

    private static WriteHandle create(BookKeeper bk, DigestType dt, byte[] pw, int ens, int wq, int aq, String purpose,
                                      String ensemble) throws Exception {
        Map<String, byte[]> custom = new LinkedHashMap<>();
        custom.put("application", "tierkeeper-compat".getBytes(StandardCharsets.UTF_8));
        custom.put("tierkeeper/purpose", purpose.getBytes(StandardCharsets.UTF_8));
        if (ensemble != null) {
            custom.put(org.apache.bookkeeper.client.ChosenEnsemblePlacementPolicy.KEY, ensemble.getBytes(StandardCharsets.UTF_8));
        }
        return bk.newCreateLedgerOp()
                .withEnsembleSize(ens).withWriteQuorumSize(wq).withAckQuorumSize(aq)
                .withDigestType(dt).withPassword(pw).withCustomMetadata(custom)
                .execute().get(60, TimeUnit.SECONDS);
    }

    private static Map<String, Object> writeOne(BookKeeper bk, DigestType dt, byte[] pw, int ens, int wq, int aq,
                                                long seed, int entries, Path pauseDir, long pauseTimeoutMs, String ensemble) throws Exception {
        WriteHandle wh = create(bk, dt, pw, ens, wq, aq, ensemble != null ? "chosen-ensemble"
                : pauseDir == null ? "digest-" + dt.name() : "ensemble-change", ensemble);
        List<Object> es = new ArrayList<>();
        for (int e = 0; e < entries; e++) {
            if (pauseDir != null && e == entries / 2) {
                pause(wh, pauseDir, pauseTimeoutMs);
            }
            byte[] p = Payloads.payload(seed, e, Payloads.size(e));
            long id = wh.append(p);
            if (id != e) {
                throw new IllegalStateException("append returned entry id " + id + ", want " + e);
            }
            es.add(entryJson(e, p.length, Payloads.sha256Hex(p)));
        }
        wh.close();
        LedgerMetadata md = wh.getLedgerMetadata();
        if (pauseDir != null && md.getAllEnsembles().size() < 2) {
            throw new IllegalStateException("no ensemble change happened in ledger " + wh.getId() + ": " + md.toSafeString());
        }
        return written(md, pw, seed, entries, es);
    }

    /** The manifest entry of a ledger written by writeOne/writeBig. */
    private static Map<String, Object> written(LedgerMetadata md, byte[] pw, long seed, long entryCount, List<Object> entries) {
        Map<String, Object> m = describe(md);
        m.put("password", new String(pw, StandardCharsets.UTF_8));
        m.put("seed", seed);
        m.put("entryCount", entryCount);
        m.put("ensembleChange", md.getAllEnsembles().size() > 1);
        m.put("entries", entries);
        return m;
    }

    /** Writes pauseDir/ready.json (ledger id, current ensemble) and waits for pauseDir/go. */
    private static void pause(WriteHandle wh, Path dir, long timeoutMs) throws Exception {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("ledgerId", wh.getId());
        r.put("lastAddConfirmed", wh.getLastAddConfirmed());
        List<String> ids = new ArrayList<>();
        for (BookieId b : wh.getLedgerMetadata().getAllEnsembles().lastEntry().getValue()) {
            ids.add(b.toString());
        }
        r.put("ensemble", ids);
        Files.createDirectories(dir);
        Path tmp = dir.resolve("ready.json.tmp");
        Tool.JSON.writeValue(tmp.toFile(), r);
        Files.move(tmp, dir.resolve("ready.json"), StandardCopyOption.ATOMIC_MOVE);
        Tool.log("paused writing ledger " + wh.getId() + " with ensemble " + ids + "; waiting for " + dir.resolve("go"));
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (!Files.exists(dir.resolve("go"))) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("no " + dir.resolve("go") + " after " + timeoutMs + " ms");
            }
            Thread.sleep(50);
        }
        Tool.log("resuming ledger " + wh.getId());
    }

    private static Map<String, Object> entryJson(long id, int len, String sha) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("entryId", id);
        m.put("length", len);
        m.put("sha256", sha);
        return m;
    }

    private static Map<String, Object> writeBig(BookKeeper bk, DigestType dt, byte[] pw, int ens, int wq, int aq,
                                                long seed, long n, int size, int outstanding) throws Exception {
        WriteHandle wh = create(bk, dt, pw, ens, wq, aq, "big");
        Semaphore inflight = new Semaphore(outstanding);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        String[] shas = new String[(int) n];
        long t0 = System.nanoTime();
        for (long e = 0; e < n && failure.get() == null; e++) {
            byte[] p = Payloads.payload(seed, e, size);
            shas[(int) e] = Payloads.sha256Hex(p);
            inflight.acquire();
            final long want = e;
            wh.appendAsync(p).whenComplete((id, err) -> {
                if (err != null) {
                    failure.compareAndSet(null, err);
                } else if (id != want) {
                    failure.compareAndSet(null, new IllegalStateException("entry id " + id + ", want " + want));
                }
                inflight.release();
            });
        }
        inflight.acquire(outstanding);
        if (failure.get() != null) {
            throw new IllegalStateException("append failed", failure.get());
        }
        wh.close();
        double secs = (System.nanoTime() - t0) / 1e9;
        LedgerMetadata md = wh.getLedgerMetadata();
        List<Object> es = new ArrayList<>();
        for (int e = 0; e < n; e++) {
            es.add(entryJson(e, size, shas[e]));
        }
        Map<String, Object> m = written(md, pw, seed, n, es);
        m.put("writeSeconds", secs);
        m.put("writeMBps", md.getLength() / 1e6 / secs);
        return m;
    }

    // ---------------------------------------------------------------- read-ledger-bench

    /** Opens a closed ledger without recovery, using the password from its metadata. */
    static ReadHandle openNoRecovery(BookKeeper bk, long ledgerId) throws Exception {
        BookKeeperAdmin admin = new BookKeeperAdmin(bk);
        return admin.openLedgerNoRecovery(ledgerId);
    }

    static Object readLedgerBench(Args a) throws Exception {
        String uri = metadataUri(a);
        long ledgerId = a.id("ledger");
        int batch = a.intv("batch", 100);
        int outstanding = a.intv("outstanding", 8);
        boolean v3 = a.bool("v3");
        boolean batchRead = a.bool("batch-read");
        long maxBatchBytes = a.longv("batch-max-bytes", 5L << 20);
        boolean checksum = a.bool("checksum");
        boolean sticky = !a.bool("no-sticky-reads");
        int repeat = a.intv("repeat", 1);
        long maxInflight = a.longv("max-inflight-bytes", 32L << 20);
        a.done();
        if (batchRead && v3) {
            throw new Args.UsageException("--batch-read needs the v2 protocol");
        }
        ClientConfiguration conf = clientConf(uri, !v3);
        conf.setStickyReadsEnabled(sticky);
        conf.setBatchReadEnabled(batchRead);
        List<Object> runs = new ArrayList<>();
        Map<String, Object> res = new LinkedHashMap<>();
        try (BookKeeper bk = new BookKeeper(conf); ReadHandle rh = openNoRecovery(bk, ledgerId)) {
            long lac = rh.getLastAddConfirmed();
            // Bound the bytes in flight as a tuned reader would (Pulsar caps
            // reads in flight by size too): with 1 MiB entries, 8 x 100
            // entries would be 800 MiB and exhaust the bookies' direct memory.
            long avg = Math.max(1, rh.getLength() / Math.max(1, lac + 1));
            int fit = (int) Math.max(1, Math.min(batch, maxInflight / outstanding / avg));
            if (fit < batch) {
                Tool.log("batch " + batch + " -> " + fit + " entries (average entry " + avg + " B, --max-inflight-bytes " + maxInflight + ")");
                batch = fit;
            }
            for (int r = 0; r < repeat; r++) {
                runs.add(readAll(rh, lac, batch, outstanding, batchRead, maxBatchBytes, checksum));
            }
            res.put("ledgerId", ledgerId);
            res.put("lastEntryId", lac);
            res.put("length", rh.getLength());
        }
        res.put("wireProtocol", v3 ? "v3" : "v2");
        res.put("batch", batch);
        res.put("outstanding", outstanding);
        res.put("batchRead", batchRead);
        res.put("stickyReads", sticky);
        res.put("runs", runs);
        // Headline figures: the last run (warm caches when --repeat > 1).
        res.putAll((Map<String, Object>) runs.get(runs.size() - 1));
        return res;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> readAll(ReadHandle rh, long lac, int batch, int outstanding,
                                               boolean batchRead, long maxBatchBytes, boolean checksum) throws Exception {
        long n = lac + 1;
        byte[][] shas = checksum ? new byte[(int) n][] : null;
        AtomicLong bytes = new AtomicLong();
        AtomicLong count = new AtomicLong();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Semaphore inflight = new Semaphore(outstanding);
        long t0 = System.nanoTime();
        long next = 0;
        while (next < n && failure.get() == null) {
            inflight.acquire();
            long first = next;
            long last = Math.min(n - 1, first + batch - 1);
            CompletableFuture<LedgerEntries> f = batchRead
                    ? rh.batchReadAsync(first, (int) (last - first + 1), maxBatchBytes)
                    : rh.readAsync(first, last);
            // batchReadAsync may return fewer entries than asked; continue after what came back.
            if (batchRead) {
                LedgerEntries les;
                try {
                    les = f.get(120, TimeUnit.SECONDS);
                } catch (Exception e) {
                    inflight.release();
                    throw e;
                }
                long got = consume(les, shas, bytes, count);
                inflight.release();
                if (got == 0) {
                    throw new IllegalStateException("batch read of entry " + first + " returned nothing");
                }
                next = first + got;
                continue;
            }
            next = last + 1;
            f.whenComplete((les, err) -> {
                try {
                    if (err != null) {
                        failure.compareAndSet(null, err);
                    } else {
                        consume(les, shas, bytes, count);
                    }
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                } finally {
                    inflight.release();
                }
            });
        }
        inflight.acquire(outstanding);
        if (failure.get() != null) {
            throw new IllegalStateException("read failed", failure.get());
        }
        double secs = (System.nanoTime() - t0) / 1e9;
        if (count.get() != n) {
            throw new IllegalStateException("read " + count.get() + " entries, want " + n);
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("entries", count.get());
        m.put("bytes", bytes.get());
        m.put("seconds", secs);
        m.put("mbPerSec", bytes.get() / 1e6 / secs);
        m.put("mibPerSec", bytes.get() / (double) (1 << 20) / secs);
        m.put("entriesPerSec", count.get() / secs);
        if (checksum) {
            MessageDigest all = Payloads.sha256();
            for (byte[] s : shas) {
                all.update(s);
            }
            m.put("sha256OfEntrySha256s", HexFormat.of().formatHex(all.digest()));
        }
        return m;
    }

    private static long consume(LedgerEntries les, byte[][] shas, AtomicLong bytes, AtomicLong count) {
        long got = 0;
        try (les) {
            for (LedgerEntry le : les) {
                // LedgerEntry.getLength() is the ledger length up to this
                // entry (from the entry header), not the payload size.
                long len = le.getEntryBuffer().readableBytes();
                bytes.addAndGet(len);
                count.incrementAndGet();
                got++;
                if (shas != null) {
                    shas[(int) le.getEntryId()] = Payloads.sha256().digest(le.getEntryBytes());
                }
            }
        }
        return got;
    }

    // ---------------------------------------------------------------- ledger-metadata / read-ledger

    static Object ledgerMetadata(Args a) throws Exception {
        String uri = metadataUri(a);
        long ledgerId = a.id("ledger");
        a.done();
        try (BookKeeper bk = client(uri, false); ReadHandle rh = openNoRecovery(bk, ledgerId)) {
            return describe(rh.getLedgerMetadata());
        }
    }

    static Object readLedger(Args a) throws Exception {
        String uri = metadataUri(a);
        long ledgerId = a.id("ledger");
        int batch = a.intv("batch", 100);
        boolean v2 = a.bool("v2");
        a.done();
        try (BookKeeper bk = client(uri, v2); ReadHandle rh = openNoRecovery(bk, ledgerId)) {
            Map<String, Object> m = describe(rh.getLedgerMetadata());
            m.putAll(readEntries(rh, batch));
            return m;
        }
    }

    /** Reads every entry of a handle in order: per entry length + SHA-256, and totals. */
    static Map<String, Object> readEntries(ReadHandle rh, int batch) throws Exception {
        long lac = rh.getLastAddConfirmed();
        List<Object> es = new ArrayList<>();
        long bytes = 0;
        MessageDigest all = Payloads.sha256();
        long t0 = System.nanoTime();
        for (long first = 0; first <= lac; first += batch) {
            long last = Math.min(lac, first + batch - 1);
            try (LedgerEntries les = rh.readAsync(first, last).get(120, TimeUnit.SECONDS)) {
                long want = first;
                for (LedgerEntry le : les) {
                    if (le.getEntryId() != want) {
                        throw new IllegalStateException("got entry " + le.getEntryId() + ", want " + want);
                    }
                    want++;
                    byte[] b = le.getEntryBytes();
                    bytes += b.length;
                    all.update(b);
                    es.add(entryJson(le.getEntryId(), b.length, Payloads.sha256Hex(b)));
                }
                if (want != last + 1) {
                    throw new IllegalStateException("read " + first + ".." + last + " returned up to " + (want - 1));
                }
            }
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("lastAddConfirmed", lac);
        m.put("entryCount", lac + 1);
        m.put("totalBytes", bytes);
        m.put("sha256OfAllPayloads", HexFormat.of().formatHex(all.digest()));
        m.put("readSeconds", (System.nanoTime() - t0) / 1e9);
        m.put("entries", es);
        return m;
    }
}
