package org.apache.bookkeeper.client;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.bookkeeper.client.BKException.BKNotEnoughBookiesException;
import org.apache.bookkeeper.net.BookieId;

/**
 * The default placement, except that a new ledger whose custom metadata has
 * {@value #KEY} (comma-separated bookie ids, in ensemble order) gets exactly
 * that ensemble. Tests use it to write ledgers onto chosen bookies. It lives in
 * BookKeeper's package because DefaultEnsemblePlacementPolicy's constructor is
 * package-private.
 */
public class ChosenEnsemblePlacementPolicy extends DefaultEnsemblePlacementPolicy {
    /** Custom-metadata key naming the ensemble. */
    public static final String KEY = "tierkeeper/ensemble";

    public ChosenEnsemblePlacementPolicy() {
        super();
    }

    @Override
    public PlacementResult<List<BookieId>> newEnsemble(int ensembleSize, int quorumSize, int ackQuorumSize,
            Map<String, byte[]> customMetadata, Set<BookieId> excludeBookies) throws BKNotEnoughBookiesException {
        byte[] chosen = customMetadata == null ? null : customMetadata.get(KEY);
        if (chosen == null) {
            return super.newEnsemble(ensembleSize, quorumSize, ackQuorumSize, customMetadata, excludeBookies);
        }
        List<BookieId> ids = new ArrayList<>();
        for (String s : new String(chosen, StandardCharsets.UTF_8).split(",")) {
            ids.add(BookieId.parse(s.trim()));
        }
        if (ids.size() != ensembleSize) {
            throw new IllegalArgumentException(KEY + " names " + ids.size() + " bookies, ensemble size is " + ensembleSize);
        }
        return PlacementResult.of(ids, PlacementPolicyAdherence.MEETS_STRICT);
    }
}
