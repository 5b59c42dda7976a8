package io.tierkeeper.compat;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.conf.ClientConfiguration;
import org.apache.bookkeeper.mledger.Entry;
import org.apache.bookkeeper.mledger.ManagedCursor;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.ManagedLedgerException;
import org.apache.bookkeeper.mledger.ManagedLedgerFactoryConfig;
import org.apache.bookkeeper.mledger.ManagedLedgerInfo;
import org.apache.bookkeeper.mledger.Position;
import org.apache.bookkeeper.mledger.PositionFactory;
import org.apache.bookkeeper.mledger.ReadOnlyCursor;
import org.apache.bookkeeper.mledger.impl.ManagedLedgerFactoryImpl;
import org.apache.bookkeeper.mledger.impl.ManagedLedgerImpl;
import org.apache.bookkeeper.mledger.proto.MLDataFormats;
import org.apache.pulsar.common.api.proto.CommandSubscribe;
import org.apache.pulsar.metadata.api.MetadataStoreConfig;
import org.apache.pulsar.metadata.api.extended.MetadataStoreExtended;

/** Pulsar managed-ledger subcommands: ml-write, ml-reopen, ml-offload. */
final class Ml implements AutoCloseable {
    final MetadataStoreExtended store;
    final ManagedLedgerFactoryImpl factory;

    private Ml(MetadataStoreExtended store, ManagedLedgerFactoryImpl factory) {
        this.store = store;
        this.factory = factory;
    }

    /** --zk ADDR [--v3] [--ml-compression NONE|LZ4|ZLIB|ZSTD|SNAPPY]. */
    static Ml open(Args a) throws Exception {
        String zk = a.req("zk");
        String uri = Bk.metadataUri(a);
        boolean v3 = a.bool("v3");
        String comp = a.str("ml-compression", null);
        MetadataStoreExtended store = MetadataStoreExtended.create(zk,
                MetadataStoreConfig.builder().sessionTimeoutMillis(30_000).metadataStoreName("tierkeeper-compat").build());
        // Brokers default to the v2 wire protocol (bookkeeperUseV2WireProtocol=true).
        ClientConfiguration cc = Bk.clientConf(uri, !v3);
        ManagedLedgerFactoryConfig fc = new ManagedLedgerFactoryConfig();
        if (comp != null) {
            fc.setManagedLedgerInfoCompressionType(comp);
            fc.setManagedLedgerInfoCompressionThresholdInBytes(0);
        }
        return new Ml(store, new ManagedLedgerFactoryImpl(store, cc, fc));
    }

    static ManagedLedgerConfig config(Args a) {
        ManagedLedgerConfig c = new ManagedLedgerConfig();
        c.setEnsembleSize(a.intv("ensemble", 3));
        c.setWriteQuorumSize(a.intv("write-quorum", 2));
        c.setAckQuorumSize(a.intv("ack-quorum", 2));
        c.setDigestType(Bk.digest(a.str("digest", "CRC32C")));
        c.setPassword(a.str("password", ""));
        c.setMaxEntriesPerLedger(a.intv("entries-per-ledger", 10));
        c.setMinimumRolloverTime(0, TimeUnit.MILLISECONDS);
        // Infinite retention: consumed ledgers are never trimmed.
        c.setRetentionTime(-1, TimeUnit.MINUTES);
        c.setRetentionSizeInMB(-1);
        return c;
    }

    /**
     * Shuts the factory down, waiting at most 0.5 s: every managed ledger was
     * closed explicitly before, and BookKeeper's client close can wait ~2 s
     * for its worker pool ("did not shutdown cleanly") after read-only
     * cursors; the process ends right after anyway.
     */
    @Override
    public void close() throws Exception {
        try {
            factory.shutdownAsync().get(500, TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            Tool.log("managed-ledger factory shutdown still running after 0.5 s; exiting anyway");
        } finally {
            store.close();
        }
    }

    static Map<String, Object> ledgerInfo(MLDataFormats.ManagedLedgerInfo.LedgerInfo li) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("ledgerId", li.getLedgerId());
        m.put("entries", li.hasEntries() ? li.getEntries() : null);
        m.put("size", li.hasSize() ? li.getSize() : null);
        m.put("timestamp", li.hasTimestamp() ? li.getTimestamp() : null);
        if (li.hasOffloadContext()) {
            MLDataFormats.OffloadContext oc = li.getOffloadContext();
            Map<String, Object> o = new LinkedHashMap<>();
            o.put("uidMsb", oc.getUidMsb());
            o.put("uidLsb", oc.getUidLsb());
            o.put("uuid", new UUID(oc.getUidMsb(), oc.getUidLsb()).toString());
            o.put("complete", oc.getComplete());
            o.put("bookkeeperDeleted", oc.getBookkeeperDeleted());
            o.put("timestamp", oc.getTimestamp());
            if (oc.hasDriverMetadata()) {
                MLDataFormats.OffloadDriverMetadata dm = oc.getDriverMetadata();
                Map<String, String> props = new TreeMap<>();
                for (MLDataFormats.KeyValue kv : dm.getPropertiesList()) {
                    props.put(kv.getKey(), kv.getValue());
                }
                o.put("driverName", dm.getName());
                o.put("driverMetadata", props);
            }
            o.put("offloadSegments", oc.getOffloadSegmentCount());
            m.put("offloadContext", o);
        }
        return m;
    }

    static List<Object> ledgers(ManagedLedgerImpl ml) {
        List<Object> out = new ArrayList<>();
        for (MLDataFormats.ManagedLedgerInfo.LedgerInfo li : ml.getLedgersInfoAsList()) {
            out.add(ledgerInfo(li));
        }
        return out;
    }

    /** Pulsar's own parse of the stored ManagedLedgerInfo (getManagedLedgerInfo). */
    static Map<String, Object> storedInfo(ManagedLedgerFactoryImpl f, String name) throws Exception {
        ManagedLedgerInfo info = f.getManagedLedgerInfo(name);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("version", info.version);
        List<Object> ls = new ArrayList<>();
        for (ManagedLedgerInfo.LedgerInfo li : info.ledgers) {
            Map<String, Object> l = new LinkedHashMap<>();
            l.put("ledgerId", li.ledgerId);
            l.put("entries", li.entries);
            l.put("size", li.size);
            l.put("isOffloaded", li.isOffloaded);
            l.put("offloadedContextUuid", li.offloadedContextUuid);
            ls.add(l);
        }
        m.put("ledgers", ls);
        m.put("cursors", info.cursors == null ? List.of() : new ArrayList<>(info.cursors.keySet()));
        m.put("properties", info.properties);
        return m;
    }

    static Map<String, Object> entryJson(Entry e) {
        byte[] b = e.getData();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("ledgerId", e.getLedgerId());
        m.put("entryId", e.getEntryId());
        m.put("length", b.length);
        m.put("sha256", Payloads.sha256Hex(b));
        return m;
    }

    // ---------------------------------------------------------------- ml-write

    static Object mlWrite(Args a) throws Exception {
        String name = a.req("name");
        int entries = a.intv("entries", 25);
        long seed = a.longv("seed", 1);
        int size = a.intv("entry-size", -1);
        String cursor = a.str("cursor", null);
        ManagedLedgerConfig cfg = config(a);
        try (Ml m = open(a)) {
            a.done();
            long t0 = System.nanoTime();
            ManagedLedgerImpl ml = (ManagedLedgerImpl) m.factory.open(name, cfg);
            if (cursor != null) {
                ml.openCursor(cursor, CommandSubscribe.InitialPosition.Earliest);
            }
            List<Object> written = new ArrayList<>();
            for (int e = 0; e < entries; e++) {
                byte[] p = Payloads.payload(seed, e, size >= 0 ? size : Math.min(Payloads.size(e), 65536));
                Position pos = ml.addEntry(p);
                Map<String, Object> w = new LinkedHashMap<>();
                w.put("ledgerId", pos.getLedgerId());
                w.put("entryId", pos.getEntryId());
                w.put("index", e);
                w.put("length", p.length);
                w.put("sha256", Payloads.sha256Hex(p));
                written.add(w);
            }
            List<Object> before = ledgers(ml);
            ml.close();
            Map<String, Object> res = new LinkedHashMap<>();
            res.put("name", name);
            res.put("seed", seed);
            res.put("entries", written);
            res.put("ledgersBeforeClose", before);
            res.put("ledgers", ledgers(ml));
            res.put("stored", storedInfo(m.factory, name));
            res.put("seconds", (System.nanoTime() - t0) / 1e9);
            return res;
        }
    }

    // ---------------------------------------------------------------- ml-reopen

    static Object mlReopen(Args a) throws Exception {
        String name = a.req("name");
        String mode = a.str("mode", "open");
        boolean read = !a.bool("no-read");
        int batch = a.intv("batch", 50);
        ManagedLedgerConfig cfg = config(a);
        Offload off = Offload.wanted(a) ? Offload.open(a) : null;
        try (Ml m = open(a)) {
            a.done();
            if (off != null) {
                cfg.setLedgerOffloader(off.offloader);
            }
            Map<String, Object> res = new LinkedHashMap<>();
            res.put("name", name);
            res.put("mode", mode);
            res.put("storedBeforeOpen", storedInfo(m.factory, name));
            switch (mode) {
                case "open" -> {
                    ManagedLedgerImpl ml = (ManagedLedgerImpl) m.factory.open(name, cfg);
                    res.put("ledgers", ledgers(ml));
                    if (read) {
                        ManagedCursor c = ml.newNonDurableCursor(PositionFactory.EARLIEST);
                        readAll(res, batch, c::hasMoreEntries, () -> c.readEntries(batch));
                    }
                    ml.close();
                    res.put("storedAfterClose", storedInfo(m.factory, name));
                }
                case "readonly" -> {
                    ReadOnlyCursor c = m.factory.openReadOnlyCursor(name, PositionFactory.EARLIEST, cfg);
                    res.put("numberOfEntries", c.getNumberOfEntries());
                    if (read) {
                        readAll(res, batch, c::hasMoreEntries, () -> c.readEntries(batch));
                    }
                    c.close();
                }
                default -> throw new Args.UsageException("--mode: open or readonly, got " + mode);
            }
            if (off != null) {
                res.put("offloader", off.config);
            }
            return res;
        } finally {
            if (off != null) {
                off.close();
            }
        }
    }

    /** Whether every offloaded ledger is marked bookkeeperDeleted. */
    static boolean allBkDeleted(ManagedLedgerImpl ml) {
        for (MLDataFormats.ManagedLedgerInfo.LedgerInfo li : ml.getLedgersInfoAsList()) {
            if (li.hasOffloadContext() && li.getOffloadContext().getComplete()
                    && !li.getOffloadContext().getBookkeeperDeleted()) {
                return false;
            }
        }
        return true;
    }

    interface Reader {
        List<Entry> read() throws InterruptedException, ManagedLedgerException;
    }

    interface More {
        boolean more();
    }

    /** Reads every entry; a failure is reported in the result (readError), not thrown. */
    static void readAll(Map<String, Object> res, int batch, More more, Reader r) {
        List<Object> es = new ArrayList<>();
        long bytes = 0;
        long t0 = System.nanoTime();
        try {
            int rounds = 0;
            while (more.more()) {
                if (++rounds > 10_000_000) {
                    throw new IllegalStateException("too many read rounds");
                }
                List<Entry> got = r.read();
                if (got.isEmpty()) {
                    break;
                }
                for (Entry e : got) {
                    es.add(entryJson(e));
                    bytes += e.getLength();
                    e.release();
                }
            }
        } catch (Exception e) {
            Tool.log("read failed: " + e);
            res.put("readError", e.toString());
        }
        res.put("readEntries", es);
        res.put("readCount", es.size());
        res.put("readBytes", bytes);
        res.put("readSeconds", (System.nanoTime() - t0) / 1e9);
    }

    // ---------------------------------------------------------------- ml-offload

    /** Pulsar's own offload of a managed ledger: every ledger before the current one. */
    static Object mlOffload(Args a) throws Exception {
        String name = a.req("name");
        boolean deleteBk = a.bool("delete-bk");
        ManagedLedgerConfig cfg = config(a);
        try (Offload off = Offload.open(a); Ml m = open(a)) {
            a.done();
            cfg.setLedgerOffloader(off.offloader);
            ManagedLedgerImpl ml = (ManagedLedgerImpl) m.factory.open(name, cfg);
            long t0 = System.nanoTime();
            Position upTo = ml.getLastConfirmedEntry();
            Position after = ml.offloadPrefix(upTo);
            Map<String, Object> res = new LinkedHashMap<>();
            res.put("name", name);
            res.put("offloadedUpTo", upTo.toString());
            res.put("firstUnoffloaded", after.toString());
            res.put("seconds", (System.nanoTime() - t0) / 1e9);
            if (deleteBk) {
                // Pulsar deletes an offloaded ledger from BookKeeper when the
                // trimmer runs after the deletion lag (set it to 0 with
                // --offload-prop managedLedgerOffloadDeletionLagInMillis=0).
                for (int i = 0; i < 100 && !allBkDeleted(ml); i++) {
                    java.util.concurrent.CompletableFuture<Void> p = new java.util.concurrent.CompletableFuture<>();
                    ml.trimConsumedLedgersInBackground(p);
                    p.get(60, TimeUnit.SECONDS);
                    if (!allBkDeleted(ml)) {
                        Thread.sleep(100);
                    }
                }
                res.put("bookkeeperDeleted", allBkDeleted(ml));
            }
            res.put("ledgers", ledgers(ml));
            ml.close();
            res.put("stored", storedInfo(m.factory, name));
            res.put("offloader", off.config);
            return res;
        }
    }
}
