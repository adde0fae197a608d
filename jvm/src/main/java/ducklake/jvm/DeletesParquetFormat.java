package ducklake.jvm;

import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.HadoopReadOptions;
import org.apache.parquet.ParquetReadOptions;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import scala.Function1;
import scala.Option;
import scala.collection.AbstractIterator;
import scala.collection.Iterator;
import scala.collection.immutable.Map;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction1;

/**
 * Spark's Parquet source, dropping the rows a DuckLake table's deletes remove inside the
 * reader: {@code spark.read.format("ducklake.jvm.DeletesParquetFormat")} with the options
 * {@value #DELETES} ({@link DeleteBits}'s spec) and {@value #SNAPSHOT}.
 *
 * <p>The reader tests the position of each row in its file against the file's deleted bits and
 * hands on the kept rows: a columnar batch through {@link FilteredVector}s that skip the deleted
 * rows (no copy), a row as it is or by a projection. A read without pushed filters skips no row,
 * so positions are counted (from each row group's first, for a part of a split file). Otherwise
 * it asks Spark's own Parquet reader for one more column, the position ({@value #ROW_INDEX},
 * which that reader fills), and drops that column again, unless the read schema names it itself
 * (scans that locate rows in their files). Without the options it is Spark's Parquet source
 * unchanged.
 */
public final class DeletesParquetFormat extends ParquetFileFormat {
  private static final long serialVersionUID = 1L;
  public static final String DELETES = "ducklake.deletes";
  public static final String SNAPSHOT = "ducklake.deletes.snapshot";
  /** Spark's name for the row-position column its Parquet readers fill. */
  static final String ROW_INDEX = "_tmp_metadata_row_index";

  @Override
  public String toString() {
    return "DuckLakeParquet"; // how plans name the scan
  }

  @Override
  public Option<Seq<String>> vectorTypes(
      StructType requiredSchema, StructType partitionSchema, SQLConf conf) {
    Option<Seq<String>> types = super.vectorTypes(requiredSchema, partitionSchema, conf);
    if (types.isEmpty()) {
      return types;
    }
    // the batches hold FilteredVectors as well as Spark's own vectors
    List<String> any = Collections.nCopies(types.get().length(), ColumnVector.class.getName());
    return Option.apply(CollectionConverters.asScala(any).toList());
  }

  @Override
  public Function1<PartitionedFile, Iterator<InternalRow>> buildReaderWithPartitionValues(
      SparkSession session,
      StructType dataSchema,
      StructType partitionSchema,
      StructType requiredSchema,
      Seq<Filter> filters,
      Map<String, String> options,
      Configuration hadoopConf) {
    Option<String> spec = options.get(DELETES);
    if (spec.isEmpty() || spec.get().isEmpty()) {
      return super.buildReaderWithPartitionValues(
          session, dataSchema, partitionSchema, requiredSchema, filters, options, hadoopConf);
    }
    if (partitionSchema.nonEmpty()) {
      throw new IllegalArgumentException("DeletesParquetFormat reads no partition directories");
    }
    long snapshot = Long.parseLong(options.get(SNAPSHOT).get());
    DeleteBits deletes = new DeleteBits(spec.get(), snapshot, hadoopConf);
    // a caller that reads the positions (to find rows in their files) keeps them
    int asked = Arrays.asList(requiredSchema.fieldNames()).indexOf(ROW_INDEX);
    StructType positioned =
        asked >= 0 ? requiredSchema : requiredSchema.add(ROW_INDEX, DataTypes.LongType, true);
    Function1<PartitionedFile, Iterator<InternalRow>> read =
        super.buildReaderWithPartitionValues(
            session,
            dataSchema,
            partitionSchema,
            positioned,
            filters,
            options,
            new Configuration(hadoopConf));
    int position = asked >= 0 ? asked : requiredSchema.length();
    // Without pushed filters a file's rows arrive in order, none skipped: their positions
    // are counted, which costs nothing, where Spark's row index costs a boxed iterator step
    // per row (`read` stays for split files of encrypted lakes, see rowGroups). Each reader
    // gets its own copy of the Hadoop settings: Spark's sets the read schema in them, and a
    // local broadcast holds the very object.
    Function1<PartitionedFile, Iterator<InternalRow>> counted =
        asked < 0 && filters.isEmpty()
            ? super.buildReaderWithPartitionValues(
                session,
                dataSchema,
                partitionSchema,
                requiredSchema,
                filters,
                options,
                new Configuration(hadoopConf))
            : null;
    return new SkippingReader(read, counted, deletes, requiredSchema, position);
  }

  /** Per file: Spark's reader of it, without the rows deleted. */
  private static final class SkippingReader
      extends AbstractFunction1<PartitionedFile, Iterator<InternalRow>> implements Serializable {
    private static final long serialVersionUID = 1L;
    private final Function1<PartitionedFile, Iterator<InternalRow>> read;
    private final Function1<PartitionedFile, Iterator<InternalRow>> counted;
    private final DeleteBits deletes;
    private final StructType schema;
    private final int position;

    SkippingReader(
        Function1<PartitionedFile, Iterator<InternalRow>> read,
        Function1<PartitionedFile, Iterator<InternalRow>> counted,
        DeleteBits deletes,
        StructType schema,
        int position) {
      this.read = read;
      this.counted = counted;
      this.deletes = deletes;
      this.schema = schema;
      this.position = position;
    }

    @Override
    public Iterator<InternalRow> apply(PartitionedFile file) {
      long[] bits = deletes.of(file.fileSize(), file.toPath().getName());
      RowGroups groups = counted == null ? null : rowGroups(file);
      @SuppressWarnings("unchecked") // Spark hands batches through an Iterator[InternalRow]
      Iterator<Object> items =
          (Iterator<Object>) (Iterator<?>) (groups != null ? counted : read).apply(file);
      @SuppressWarnings("unchecked")
      Iterator<InternalRow> kept =
          (Iterator<InternalRow>)
              (Iterator<?>) new Kept(items, bits, schema, position, groups, file.toString());
      return kept;
    }

    /**
     * The row groups this part of the file reads, as Spark's reader picks them for a split
     * (those whose midpoint lies in it); null where Spark's row index must tell positions
     * (split files of an encrypted lake, whose footers only the keyed reader opens).
     */
    private RowGroups rowGroups(PartitionedFile file) {
      if (file.start() == 0 && file.length() == file.fileSize()) {
        return RowGroups.WHOLE;
      }
      if (deletes.keyed()) {
        return null;
      }
      Configuration conf = deletes.fileSystemConf();
      Path path = file.toPath();
      // the footer's row groups of this part as Spark's reader picks them: by the range
      ParquetReadOptions range =
          HadoopReadOptions.builder(conf, path)
              .withRange(file.start(), file.start() + file.length())
              .build();
      try (ParquetFileReader reader =
          ParquetFileReader.open(HadoopInputFile.fromPath(path, conf), range)) {
        ParquetMetadata footer = reader.getFooter();
        // (row groups without rows hand on nothing: left out, they cannot stall the count)
        List<BlockMetaData> blocks =
            footer.getBlocks().stream().filter(b -> b.getRowCount() > 0).toList();
        long[] starts = new long[blocks.size()];
        long[] sizes = new long[blocks.size()];
        for (int i = 0; i < starts.length; i++) {
          starts[i] = blocks.get(i).getRowIndexOffset();
          sizes[i] = blocks.get(i).getRowCount();
          if (starts[i] < 0) {
            return null; // a footer read without row positions: the row index says
          }
        }
        return new RowGroups(starts, sizes);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }

  /**
   * The positions of the rows a read without skipped rows hands on: each row group's first
   * position and row count, read in order ({@link #WHOLE}: a whole file, one run from 0).
   */
  private record RowGroups(long[] starts, long[] sizes) {
    static final RowGroups WHOLE = new RowGroups(new long[] {0}, new long[] {Long.MAX_VALUE});
  }

  /**
   * The items of one file's read without the deleted rows, and without the position column
   * unless the caller asked for it ({@code position} inside the schema's {@code width} columns).
   * With {@code groups}, the items carry no positions: they are those row groups' rows in
   * order, so positions are counted (a batch never spans two row groups).
   */
  private static final class Kept extends AbstractIterator<Object> {
    private final Iterator<Object> items;
    private final long[] bits;
    private final StructType schema;
    private final int width;
    private final int position;
    private int[] keep = new int[0];
    private UnsafeProjection project;
    private Object pending;
    private final RowGroups groups;
    private final String file;
    private int group; // counting: the row group being read, and how many of its rows
    private long inGroup;

    Kept(
        Iterator<Object> items,
        long[] bits,
        StructType schema,
        int position,
        RowGroups groups,
        String file) {
      this.items = items;
      this.bits = bits;
      this.schema = schema;
      this.width = schema.length();
      this.position = groups == null ? position : -1;
      this.groups = groups;
      this.file = file;
    }

    /** Counting: the position of the first of the next {@code rows} rows, which it takes. */
    private long positionsOf(int rows) {
      long[] sizes = groups.sizes();
      if (group >= sizes.length || inGroup + rows > sizes[group]) {
        throw new IllegalStateException(
            "rows of " + file + " past the row groups its footer lists: positions unknown");
      }
      long at = groups.starts()[group] + inGroup;
      inGroup += rows;
      if (inGroup == sizes[group]) {
        group++;
        inGroup = 0;
      }
      return at;
    }

    /** Counting: every row group listed was read whole (else positions went astray). */
    private void checkAllRead() {
      if (groups != null && groups != RowGroups.WHOLE && group != groups.sizes().length) {
        throw new IllegalStateException(
            "fewer rows of " + file + " than the row groups its footer lists");
      }
    }

    @Override
    public boolean hasNext() {
      if (pending != null) {
        return true;
      }
      while (items.hasNext()) {
        Object item = items.next();
        if (item instanceof ColumnarBatch batch) {
          pending = filter(batch);
          return true;
        }
        InternalRow row = (InternalRow) item;
        long at = position < 0 ? positionsOf(1) : row.getLong(position);
        if (!DeleteBits.deleted(bits, at)) {
          if (position < width) {
            pending = row; // nothing to drop: Spark's row as its reader made it
            return true;
          }
          if (project == null) {
            project = UnsafeProjection.create(schema); // the first `width` columns
          }
          pending = project.apply(row);
          return true;
        }
      }
      checkAllRead();
      return false;
    }

    @Override
    public Object next() {
      if (!hasNext()) {
        throw new java.util.NoSuchElementException();
      }
      Object out = pending;
      pending = null;
      return out;
    }

    private ColumnarBatch filter(ColumnarBatch batch) {
      int rows = batch.numRows();
      if (keep.length < rows) {
        keep = new int[rows];
      }
      int kept = 0;
      if (position < 0) {
        kept = DeleteBits.keptOfRun(bits, positionsOf(rows), rows, keep);
      } else {
        ColumnVector positions = batch.column(position);
        for (int i = 0; i < rows; i++) {
          if (!DeleteBits.deleted(bits, positions.getLong(i))) {
            keep[kept++] = i;
          }
        }
      }
      ColumnVector[] columns = new ColumnVector[width];
      for (int c = 0; c < width; c++) {
        ColumnVector column = batch.column(c);
        columns[c] = kept == rows ? column : new FilteredVector(column, keep, kept);
      }
      return new ColumnarBatch(columns, kept);
    }
  }
}
