package ducklake.jvm;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.types.DataTypeUtils;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.IntegralType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.Option;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * apply_changes' last change per key of a change feed whose rows the driver holds (its optimized
 * plan a {@code LocalRelation}: no job computes it), ranked in the driver's JVM.
 *
 * <p>Ranked in Python instead, the rows cross py4j twice (out to be ranked, back as a new
 * relation): ~80 ms of a feed model's build for 20,000 rows. Here they stay where they are, as
 * the relation's own rows, and the one call also finds the feed, checks it and registers the
 * result (each a py4j round trip and a plan analysis from Python). The order is the macro's
 * window: per key (NULL keys are one key, as in a window's partition), the latest {@code
 * snapshot_id}, then an addition before a removal, then the highest {@code rowid}; NULLs rank
 * last, as {@code DESC} orders them.
 */
public final class LastChanges {
  /** The rows were ranked and the view registered. */
  public static final int RANKED = 1;

  /** Not held by the driver, too large, or a column of a type compared otherwise here. */
  public static final int NOT_HERE = 0;

  private static final List<String> ADDS = Arrays.asList("insert", "update_postimage");

  private LastChanges() {}

  /**
   * Registers temporary view {@code view} as view {@code feedView}'s rows plus {@code removedName}
   * (NULL for a NULL change type) and {@code rankName} (1), one row per key: its last change.
   * {@code keys}: the key columns' names, NUL-separated, matched as Spark does (any case).
   * {@link #NOT_HERE}, with nothing registered, when the feed's rows are not a {@code
   * LocalRelation} of at most {@code maxBytes}, or a key is not an integer, a boolean or text
   * of the binary collation, or {@code snapshot_id} / {@code rowid} not a BIGINT, or {@code
   * change_type} not text of the binary collation.
   */
  public static int rankHeld(
      SparkSession spark,
      String feedView,
      String view,
      String keys,
      long maxBytes,
      String removedName,
      String rankName) {
    Dataset<Row> feed = (Dataset<Row>) spark.table(quoted(feedView));
    LogicalPlan plan = feed.queryExecution().optimizedPlan();
    if (!(plan instanceof LocalRelation local)) {
      return NOT_HERE;
    }
    if (local.stats().sizeInBytes().bigInteger().compareTo(BigInteger.valueOf(maxBytes)) > 0) {
      return NOT_HERE;
    }
    StructType schema = local.schema();
    Map<String, Integer> at = new HashMap<>();
    StructField[] fields = schema.fields();
    for (int i = 0; i < fields.length; i++) {
      at.put(fields[i].name().toLowerCase(Locale.ROOT), i); // the last of a name, as Python's
    }
    Integer snapshotAt = at.get("snapshot_id");
    Integer changeAt = at.get("change_type");
    int rowidAt = at.getOrDefault("rowid", -1);
    if (snapshotAt == null || changeAt == null) {
      return NOT_HERE;
    }
    if (!(fields[snapshotAt].dataType() instanceof LongType)
        || !binaryText(fields[changeAt].dataType())
        || (rowidAt >= 0 && !(fields[rowidAt].dataType() instanceof LongType))) {
      return NOT_HERE;
    }
    String[] names = keys.split("\u0000");
    int[] keyAt = new int[names.length];
    for (int i = 0; i < names.length; i++) {
      Integer k = at.get(names[i].toLowerCase(Locale.ROOT));
      if (k == null || !keyable(fields[k].dataType())) {
        return NOT_HERE;
      }
      keyAt[i] = k;
    }
    List<InternalRow> ranked = lastPerKey(local, keyAt, snapshotAt, changeAt, rowidAt);
    StructType out =
        schema
            .add(removedName, DataTypes.BooleanType, true)
            .add(rankName, DataTypes.IntegerType, false);
    @SuppressWarnings({"unchecked", "rawtypes"})
    Seq<org.apache.spark.sql.catalyst.expressions.Attribute> output =
        (Seq) DataTypeUtils.toAttributes(out);
    Seq<InternalRow> rows = CollectionConverters.asScala(ranked).toSeq();
    LocalRelation relation = new LocalRelation(output, rows, false, Option.empty());
    Dataset.ofRows((org.apache.spark.sql.classic.SparkSession) spark, relation)
        .createOrReplaceTempView(view);
    return RANKED;
  }

  /** Each key's last change among {@code local}'s rows, with the removal flag and rank. */
  static List<InternalRow> lastPerKey(
      LocalRelation local, int[] keyAt, int snapshotAt, int changeAt, int rowidAt) {
    DataType[] types =
        Arrays.stream(local.schema().fields()).map(StructField::dataType).toArray(DataType[]::new);
    Map<Object, InternalRow> last = new LinkedHashMap<>();
    for (InternalRow row : CollectionConverters.asJava(local.data())) {
      Object key;
      if (keyAt.length == 1) {
        key = row.isNullAt(keyAt[0]) ? null : row.get(keyAt[0], types[keyAt[0]]);
      } else {
        Object[] parts = new Object[keyAt.length];
        for (int i = 0; i < keyAt.length; i++) {
          parts[i] = row.isNullAt(keyAt[i]) ? null : row.get(keyAt[i], types[keyAt[i]]);
        }
        key = Arrays.asList(parts);
      }
      InternalRow held = last.get(key);
      if (held == null || before(row, held, snapshotAt, changeAt, rowidAt)) {
        last.put(key, row);
      }
    }
    int width = types.length;
    List<InternalRow> out = new ArrayList<>(last.size());
    for (InternalRow row : last.values()) {
      Object[] values = new Object[width + 2];
      for (int i = 0; i < width; i++) {
        values[i] = row.isNullAt(i) ? null : row.get(i, types[i]);
      }
      values[width] = row.isNullAt(changeAt) ? null : !adds(row, changeAt);
      values[width + 1] = 1;
      out.add(new GenericInternalRow(values));
    }
    return out;
  }

  /** Whether {@code row} ranks before {@code held} among one key's changes. */
  static boolean before(
      InternalRow row, InternalRow held, int snapshotAt, int changeAt, int rowidAt) {
    int c = descending(row, held, snapshotAt);
    if (c == 0) {
      c = Boolean.compare(adds(held, changeAt), adds(row, changeAt));
    }
    if (c == 0 && rowidAt >= 0) {
      c = descending(row, held, rowidAt);
    }
    return c < 0;
  }

  private static boolean adds(InternalRow row, int changeAt) {
    if (row.isNullAt(changeAt)) {
      return false;
    }
    // compared as Java text: Spark's own text class is not among the classes built against
    return ADDS.contains(row.get(changeAt, DataTypes.StringType).toString());
  }

  /** Order of two BIGINTs, higher first and NULL last. */
  private static int descending(InternalRow a, InternalRow b, int at) {
    boolean aNull = a.isNullAt(at);
    boolean bNull = b.isNullAt(at);
    if (aNull || bNull) {
      return Boolean.compare(aNull, bNull);
    }
    return Long.compare(b.getLong(at), a.getLong(at));
  }

  /** Whether a key of this type is grouped here as Spark's window partitions it. */
  private static boolean keyable(DataType type) {
    return type instanceof IntegralType || type instanceof BooleanType || binaryText(type);
  }

  /** Text compared by its bytes (no collation such as UTF8_LCASE). */
  private static boolean binaryText(DataType type) {
    return type instanceof StringType s && s.isUTF8BinaryCollation();
  }

  private static String quoted(String name) {
    return "`" + name.replace("`", "``") + "`";
  }
}
