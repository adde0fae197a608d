package ducklake.jvm;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.api.java.UDF2;

/**
 * {@code kept(_metadata.file_size, row position)}: false for a row its table's deletes (delete
 * file, deletion vector, inlined deletes) remove as of the snapshot read.
 *
 * <p>It runs inside the scan's own stage: the first row of a data file loads that file's
 * deletes ({@link DeleteBits}), every row then tests one bit. The scans that read files
 * needing only their deletes use {@link DeletesParquetFormat}, which drops the rows in the
 * reader; this filter serves the scans that match rows to their files anyway.
 */
public final class KeptRowsUdf implements UDF2<Long, Long, Boolean> {
  private static final long serialVersionUID = 1L;

  private final DeleteBits deletes;
  private transient long lastSize = -1;
  private transient long[] lastBits;

  /** {@code spec}: {@link DeleteBits}'s, one line per data file with deletes. */
  public KeptRowsUdf(String spec, long snapshot, Configuration conf) {
    this.deletes = new DeleteBits(spec, snapshot, conf);
  }

  @Override
  public Boolean call(Long size, Long position) {
    if (size == null || position == null) {
      return Boolean.TRUE; // inlined rows: their deletes are applied on the driver
    }
    long s = size;
    if (s != lastSize) {
      lastBits = deletes.of(s);
      lastSize = s;
    }
    return !DeleteBits.deleted(lastBits, position);
  }
}
