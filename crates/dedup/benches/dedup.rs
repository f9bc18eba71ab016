//! Criterion benchmarks of the dedup crate.
//!
//! - `fingerprint_bytes` / `fingerprint_docs`: SimHash of generated Chinese
//!   news-like text (jieba segmentation + TF-IDF + hashing), one thread, in
//!   MB/s and documents/s.
//! - `index/<store>_m<m>_<n>`: queries (`Deduper::near`, misses and hits)
//!   and insert+query (`Deduper::check_batch` of 1000 new signatures, and of
//!   one signature) against `n` stored fingerprints, for the in-memory and the
//!   redb store with m = 4 and m = 6 blocks (k = 3).
//!
//! Environment:
//! - `DEDUP_BENCH_SIZES`: stored fingerprints, comma separated
//!   (default `1000000`), e.g. `1000000,10000000`.
//! - `DEDUP_BENCH_SKETCH_BITS`: bits kept of each sketch bin, 8 (the
//!   default, as a new store keeps) or 16.
//! - `DEDUP_BENCH_CONFIGS`: which stores/layouts, comma separated, from
//!   `mem4,mem6,redb4,redb6` (default all), and `redis4`, `redis6`, `replica4` (with
//!   `--features redis` and `SIMCRAWL_REDIS_URL`: the Redis store, namespace
//!   `bench`, whose Redis memory per document is printed too, by part
//!   (`RedisStore::memory_by_part`), with that of 100k URL records and
//!   titles in namespace `bench-tiers`).
//! - `DEDUP_BENCH_DIR`: where the redb files go (default the system temp dir).
//!   `sled4` (with `--features sled`) compares the optional sled store.
//! - `DEDUP_BENCH_REDB_CACHE_MB`: redb's page cache (default 64, the
//!   library default; an index service would give it more).
//! - `DEDUP_BENCH_BANDS`: LSH bands over the sketch (default 10, the
//!   library default; 0 measures verified SimHash candidates only).
//! - `DEDUP_BENCH_TEXTS`: a JSONL file whose lines' `text` fields the
//!   fingerprint benches sign instead of the generated corpus (real text:
//!   the labelled set's `target/eval-set/docs.jsonl`, as `crawl dedup`
//!   reads it, issue 37); `DEDUP_BENCH_TEXTS_MAX` caps how many (default 400).
//!
//! Each store is populated once (directly through `Store::write`, 100k
//! documents per transaction), shared by its benchmarks and dropped before
//! the next is built. Populate time and RSS are printed on stderr.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use simcrawl_dedup::store::DocRecord;
use simcrawl_dedup::{
    BlockLayout, DedupConfig, Deduper, FeatureConfig, Features, Fingerprint, MemoryStore, RedbOptions,
    RedbStore, Signature, Sketch, Store, TitlePolicy, Verdict,
};

// ---------------------------------------------------------------------------
// Chinese text
// ---------------------------------------------------------------------------

const PLACES: &[&str] = &[
    "北京",
    "上海",
    "广州",
    "深圳",
    "天津",
    "重庆",
    "成都",
    "武汉",
    "杭州",
    "南京",
    "西安",
    "长沙",
    "郑州",
    "济南",
    "青岛",
    "沈阳",
    "大连",
    "哈尔滨",
    "长春",
    "昆明",
    "贵阳",
    "南宁",
    "福州",
    "厦门",
    "合肥",
    "南昌",
    "石家庄",
    "太原",
    "呼和浩特",
    "兰州",
    "西宁",
    "银川",
    "乌鲁木齐",
    "拉萨",
    "海口",
    "苏州",
    "宁波",
    "无锡",
    "东莞",
    "佛山",
    "粤港澳大湾区",
    "长三角地区",
    "京津冀地区",
    "成渝地区",
    "黄河流域",
    "长江经济带",
    "东北地区",
    "中西部地区",
    "沿海城市",
    "县域",
    "农村地区",
    "雄安新区",
    "浦东新区",
    "海南自由贸易港",
];

const SUBJECTS: &[&str] = &[
    "国务院",
    "国家统计局",
    "国家发展改革委",
    "财政部",
    "商务部",
    "工业和信息化部",
    "中国人民银行",
    "国家金融监督管理总局",
    "中国证监会",
    "生态环境部",
    "交通运输部",
    "农业农村部",
    "教育部",
    "科技部",
    "国家卫生健康委",
    "住房和城乡建设部",
    "自然资源部",
    "水利部",
    "应急管理部",
    "市场监管总局",
    "海关总署",
    "国家能源局",
    "国家医保局",
    "国家数据局",
    "人力资源和社会保障部",
    "文化和旅游部",
    "民政部",
    "司法部",
    "最高人民法院",
    "最高人民检察院",
    "全国人大常委会",
    "全国政协",
    "市政府",
    "省委",
    "地方政府",
    "有关部门",
    "监管部门",
    "相关企业",
    "龙头企业",
    "中小企业",
    "民营企业",
    "国有企业",
    "科研院所",
    "高等院校",
    "行业协会",
    "金融机构",
    "商业银行",
    "保险公司",
    "证券公司",
    "外资企业",
    "专家学者",
    "业内人士",
    "分析人士",
    "市场人士",
    "消费者",
    "新能源汽车企业",
    "电商平台",
    "物流企业",
    "芯片制造商",
    "航空公司",
];

const VERBS: &[&str] = &[
    "发布", "印发", "出台", "召开", "部署", "推进", "加快", "深化", "优化", "完善", "加强", "提升", "扩大",
    "推动", "落实", "启动", "实施", "开展", "研究", "制定", "修订", "公布", "宣布", "签署", "举办", "组织",
    "支持", "鼓励", "引导", "规范", "整治", "排查", "应对", "防范", "化解", "稳定", "促进", "培育", "建设",
    "打造", "发展", "改革", "创新", "升级", "调整", "降低", "提高", "增加", "减少", "保障", "服务", "监测",
    "评估", "审议", "通过", "批准", "表示", "指出", "强调", "认为", "介绍", "透露", "预计", "显示",
];

const OBJECTS: &[&str] = &[
    "营商环境",
    "政策措施",
    "实施方案",
    "指导意见",
    "管理办法",
    "行动计划",
    "发展规划",
    "工作方案",
    "通知",
    "报告",
    "数据",
    "统计公报",
    "专项行动",
    "试点工作",
    "重点项目",
    "基础设施",
    "产业链",
    "供应链",
    "创新链",
    "数字经济",
    "实体经济",
    "先进制造业",
    "现代服务业",
    "战略性新兴产业",
    "人工智能",
    "大数据",
    "云计算",
    "物联网",
    "区块链",
    "集成电路",
    "新能源",
    "储能",
    "光伏",
    "风电",
    "氢能",
    "新材料",
    "生物医药",
    "高端装备",
    "智能制造",
    "工业互联网",
    "算力网络",
    "低空经济",
    "跨境电商",
    "外贸",
    "外资",
    "消费市场",
    "居民收入",
    "就业形势",
    "社会保障",
    "养老服务",
    "医疗卫生",
    "义务教育",
    "职业教育",
    "住房保障",
    "城市更新",
    "乡村振兴",
    "粮食安全",
    "耕地保护",
    "生态环境",
    "污染防治",
    "碳排放",
    "碳达峰",
    "碳中和",
    "绿色转型",
    "能源安全",
    "水资源",
    "防汛抗旱",
    "地质灾害",
    "安全生产",
    "食品安全",
    "药品监管",
    "知识产权",
    "数据安全",
    "网络安全",
    "个人信息保护",
    "金融风险",
    "地方债务",
    "房地产市场",
    "资本市场",
    "债券市场",
    "汇率",
    "利率",
    "信贷投放",
    "货币政策",
    "财政政策",
    "减税降费",
    "专项债券",
    "国债",
    "消费品以旧换新",
    "设备更新",
    "科技成果转化",
    "人才培养",
    "基础研究",
    "关键核心技术",
    "标准体系",
    "公共服务",
    "交通运输",
    "铁路建设",
    "高速公路",
    "港口吞吐量",
    "民航客运",
    "旅游市场",
    "文化产业",
    "体育赛事",
    "电影票房",
    "网络零售额",
    "社会消费品零售总额",
    "固定资产投资",
    "工业增加值",
    "制造业采购经理指数",
    "居民消费价格指数",
    "工业生产者出厂价格",
    "进出口总值",
    "国内生产总值",
];

const ADVERBS: &[&str] = &[
    "进一步",
    "持续",
    "积极",
    "稳步",
    "全面",
    "大力",
    "切实",
    "有序",
    "加快",
    "着力",
    "统筹",
    "深入",
    "扎实",
    "不断",
    "有效",
    "显著",
    "明显",
    "逐步",
    "首次",
    "再次",
    "同比",
    "环比",
    "累计",
    "初步",
];

const ADJECTIVES: &[&str] = &[
    "高质量",
    "可持续",
    "稳健",
    "积极",
    "新型",
    "现代化",
    "系统性",
    "区域性",
    "全国性",
    "国际化",
    "市场化",
    "法治化",
    "便利化",
    "数字化",
    "智能化",
    "绿色",
    "低碳",
    "安全",
    "高效",
    "多元",
    "开放",
    "包容",
];

const NUMBERS: &[&str] = &[
    "百分之五点三",
    "百分之三",
    "零点四个百分点",
    "两成",
    "一倍",
    "三千亿元",
    "一万亿元",
    "五百多家",
    "两千余个",
    "十二项",
    "三大类",
    "六个方面",
    "二十条",
    "近五年",
    "上半年",
    "前三季度",
    "全年",
    "一季度",
    "十月份",
    "今年以来",
    "去年同期",
    "本月初",
    "近日",
    "日前",
    "昨天",
    "今天上午",
    "当天",
    "目前",
];

const CONNECTORS: &[&str] = &[
    "与此同时",
    "此外",
    "另外",
    "据介绍",
    "据了解",
    "记者从会上获悉",
    "数据显示",
    "总体来看",
    "下一步",
    "值得注意的是",
    "业内人士认为",
    "分析人士指出",
    "专家表示",
    "会议强调",
    "会议指出",
    "报告显示",
    "从结构上看",
    "分地区看",
    "分行业看",
    "具体来看",
    "相比之下",
    "为此",
    "因此",
    "同时",
];

const NAMES: &[&str] = &[
    "张伟", "王芳", "李娜", "刘洋", "陈静", "杨帆", "赵磊", "黄敏", "周杰", "吴霞", "徐强", "孙丽", "马超",
    "朱琳", "胡军", "郭涛", "何平", "高峰", "林晓", "罗斌",
];

const ROLES: &[&str] = &[
    "新闻发言人",
    "副部长",
    "司长",
    "首席经济学家",
    "研究员",
    "教授",
    "董事长",
    "总经理",
    "负责人",
    "副主任",
    "局长",
    "市长",
    "分析师",
    "院长",
];

fn pick<'a>(rng: &mut StdRng, words: &[&'a str]) -> &'a str {
    words.choose(rng).copied().unwrap_or("")
}

fn sentence(rng: &mut StdRng, out: &mut String) {
    match rng.random_range(0..6) {
        0 => {
            out.push_str(pick(rng, CONNECTORS));
            out.push('，');
        }
        1 => {
            out.push_str(pick(rng, NUMBERS));
            out.push('，');
        }
        _ => {}
    }
    if rng.random_bool(0.4) {
        out.push_str(pick(rng, PLACES));
    }
    out.push_str(pick(rng, SUBJECTS));
    if rng.random_bool(0.5) {
        out.push_str(pick(rng, ADVERBS));
    }
    out.push_str(pick(rng, VERBS));
    if rng.random_bool(0.4) {
        out.push_str(pick(rng, ADJECTIVES));
    }
    out.push_str(pick(rng, OBJECTS));
    let clauses = rng.random_range(0..3);
    for _ in 0..clauses {
        out.push('，');
        match rng.random_range(0..5) {
            0 => {
                out.push_str(pick(rng, OBJECTS));
                out.push_str(pick(rng, ADVERBS));
                out.push_str("增长");
                out.push_str(pick(rng, NUMBERS));
            }
            1 => {
                out.push_str("推动");
                out.push_str(pick(rng, OBJECTS));
                out.push('和');
                out.push_str(pick(rng, OBJECTS));
                out.push_str("协同发展");
            }
            2 => {
                out.push_str(pick(rng, ROLES));
                out.push_str(pick(rng, NAMES));
                out.push_str("在接受记者采访时表示，");
                out.push_str(pick(rng, OBJECTS));
                out.push('的');
                out.push_str(pick(rng, ADJECTIVES));
                out.push_str("发展态势");
                out.push_str(pick(rng, ADVERBS));
                out.push_str("巩固");
            }
            3 => {
                out.push('为');
                out.push_str(pick(rng, OBJECTS));
                out.push_str("提供");
                out.push_str(pick(rng, ADJECTIVES));
                out.push_str("支撑");
            }
            _ => {
                out.push_str(pick(rng, VERBS));
                out.push_str(pick(rng, PLACES));
                out.push('的');
                out.push_str(pick(rng, OBJECTS));
            }
        }
    }
    out.push(if rng.random_bool(0.1) { '；' } else { '。' });
}

/// A news-like document of about `target` bytes of UTF-8.
fn document(rng: &mut StdRng, target: usize) -> String {
    let mut out = String::with_capacity(target + 256);
    out.push_str("（记者");
    out.push_str(pick(rng, NAMES));
    out.push('）');
    while out.len() < target {
        let n = rng.random_range(3..8);
        for _ in 0..n {
            sentence(rng, &mut out);
        }
        out.push('\n');
    }
    out
}

/// `n` documents of 3 to 10 KB, deterministic.
fn corpus(n: usize) -> Vec<String> {
    let mut rng = StdRng::seed_from_u64(20240601);
    (0..n)
        .map(|_| {
            let target = rng.random_range(3_000..10_000);
            document(&mut rng, target)
        })
        .collect()
}

/// The `text` fields of `DEDUP_BENCH_TEXTS`'s lines (at most
/// `DEDUP_BENCH_TEXTS_MAX`, default 400, spread over the file), or `None`
/// when it is not set.
fn texts_from_env() -> Option<Vec<String>> {
    let path = std::env::var_os("DEDUP_BENCH_TEXTS")?;
    let max: usize = std::env::var("DEDUP_BENCH_TEXTS_MAX")
        .ok()
        .map(|v| v.parse().expect("DEDUP_BENCH_TEXTS_MAX: a number"))
        .unwrap_or(400);
    let all = std::fs::read_to_string(&path).expect("DEDUP_BENCH_TEXTS: a readable file");
    let texts: Vec<String> = all
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v.get("text")?.as_str().map(str::to_owned))
        .collect();
    let step = texts.len().div_ceil(max.max(1)).max(1);
    Some(texts.into_iter().step_by(step).collect())
}

fn fingerprint_benches(c: &mut Criterion) {
    let docs = texts_from_env().unwrap_or_else(|| corpus(64));
    let bytes: usize = docs.iter().map(String::len).sum();
    eprintln!(
        "fingerprint corpus: {} docs, {} bytes ({:.1} KB/doc)",
        docs.len(),
        bytes,
        bytes as f64 / docs.len() as f64 / 1000.0
    );
    let variants: Vec<(&str, FeatureConfig)> = vec![
        ("words", FeatureConfig::default()),
        (
            "words_hmm",
            FeatureConfig {
                hmm: true,
                ..FeatureConfig::default()
            },
        ),
        (
            "words_top64",
            FeatureConfig {
                top_n: 64,
                ..FeatureConfig::default()
            },
        ),
        (
            "shingles3",
            FeatureConfig {
                extractor: simcrawl_dedup::Extractor::Shingles,
                ..FeatureConfig::default()
            },
        ),
    ];
    let variants: Vec<(&str, Features)> = variants
        .into_iter()
        .map(|(name, cfg)| (name, Features::new(cfg).unwrap()))
        .collect();
    for (_, f) in &variants {
        // Load jieba's dictionary and the IDF table outside the measurement.
        assert!(f.fingerprint(&docs[0]).is_some());
    }
    for (group_name, throughput) in [
        ("fingerprint_bytes", Throughput::Bytes(bytes as u64)),
        ("fingerprint_docs", Throughput::Elements(docs.len() as u64)),
    ] {
        let mut g = c.benchmark_group(group_name);
        short(&mut g, 4);
        g.throughput(throughput);
        for (name, f) in &variants {
            g.bench_function(*name, |b| {
                b.iter(|| {
                    for d in &docs {
                        black_box(f.fingerprint(black_box(d)));
                    }
                })
            });
        }
        // The resemblance sketch alone, and what `Deduper::sign` pays for
        // the content tier: default fingerprint + sketch.
        g.bench_function("sketch", |b| {
            b.iter(|| {
                for d in &docs {
                    black_box(Sketch::of(black_box(d)));
                }
            })
        });
        // A page's extent: its size and outline, one pass (what the crawl
        // pays per page beside the sketch).
        g.bench_function("extent", |b| {
            b.iter(|| {
                for d in &docs {
                    black_box(simcrawl_dedup::Extent::of(black_box(d)));
                }
            })
        });
        let words = &variants[0].1;
        g.bench_function("words+sketch", |b| {
            b.iter(|| {
                for d in &docs {
                    black_box(words.fingerprint(black_box(d)));
                    black_box(Sketch::of(black_box(d)));
                }
            })
        });
        g.finish();
    }
}

// ---------------------------------------------------------------------------
// Index
// ---------------------------------------------------------------------------

fn short(g: &mut BenchmarkGroup<'_, WallTime>, secs: u64) {
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(secs));
}

fn env_list(name: &str, default: &str) -> Vec<String> {
    std::env::var(name)
        .unwrap_or_else(|_| default.to_string())
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn human(n: u64) -> String {
    if n.is_multiple_of(1_000_000) {
        format!("{}M", n / 1_000_000)
    } else if n.is_multiple_of(1_000) {
        format!("{}k", n / 1_000)
    } else {
        n.to_string()
    }
}

const POPULATE_BATCH: u64 = 100_000;
/// Stored fingerprints remembered for the hit queries.
const SAMPLE: usize = 10_000;
const QUERIES: usize = 10_000;
const CHECK_BATCH: usize = 1_000;

/// Bits kept of each sketch bin (`DEDUP_BENCH_SKETCH_BITS`, default 8 as
/// for a new store; 16 measures stores made before 8-bit sketches).
fn sketch_bits() -> u32 {
    static BITS: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *BITS.get_or_init(|| {
        std::env::var("DEDUP_BENCH_SKETCH_BITS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(8)
    })
}

fn config(m: u32) -> DedupConfig {
    let bands = std::env::var("DEDUP_BENCH_BANDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DedupConfig::default().bands);
    DedupConfig {
        bands,
        sketch_bits: Some(sketch_bits()),
        blocks: m,
        max_distance: 3,
        // Signatures carry no title digest; keep the title tier out anyway.
        title_policy: TitlePolicy::Off,
        ..DedupConfig::default()
    }
}

/// Fills the store with `n` random fingerprints (urls `u0`, `u1`, ...)
/// directly through `Store::write`, `POPULATE_BATCH` documents per
/// transaction, block entries sorted by (table, key) within a transaction.
/// Returns a sample of the stored fingerprints.
fn populate<S: Store>(d: &Deduper<S>, m: u32, n: u64, seed: u64) -> Vec<Fingerprint> {
    populate_in(d, m, 0..n, seed, POPULATE_BATCH)
}

/// [`populate`] of the documents `ids`, `batch` per transaction.
fn populate_in<S: Store>(
    d: &Deduper<S>,
    m: u32,
    ids: std::ops::Range<u64>,
    seed: u64,
    batch: u64,
) -> Vec<Fingerprint> {
    let n = ids.end;
    let layout = BlockLayout::new(m, 3).unwrap();
    let (bands, rows) = (d.config().bands, d.config().band_rows);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut sample = Vec::with_capacity(SAMPLE);
    let every = ((n - ids.start) / SAMPLE as u64).max(1);
    let mut blocks: Vec<(usize, u64, u64, u64)> = Vec::new();
    let start = Instant::now();
    let mut id = ids.start;
    while id < n {
        let end = (id + batch).min(n);
        d.store()
            .write(|t| {
                blocks.clear();
                for i in id..end {
                    let fp: u64 = rng.random();
                    if i % every == 0 && sample.len() < SAMPLE {
                        sample.push(Fingerprint::new(fp));
                    }
                    let sketch = random_sketch(&mut rng);
                    for key in sketch.band_keys(bands, rows) {
                        t.add_band(key, i)?;
                    }
                    t.put_doc(
                        i,
                        DocRecord {
                            fingerprint: Fingerprint::new(fp),
                            inserted_at: 1_700_000_000,
                            title: None,
                            sketch,
                            url: format!("u{i}"),
                            article: None,
                            extent: None,
                        },
                    )?;
                    blocks.extend(layout.keys(fp).map(|(table, key)| (table, key, fp, i)));
                }
                blocks.sort_unstable();
                for &(table, key, fp, i) in &blocks {
                    t.add_block(table, key, Fingerprint::new(fp), i)?;
                }
                // Keep Deduper's id counter past the populated documents.
                t.set_meta("next_id", &end.to_le_bytes())
            })
            .unwrap();
        // Durable per batch, as `crawl dedup` commits: redb reuses the pages
        // a transaction frees only after a durable commit.
        d.flush().unwrap();
        id = end;
    }
    let secs = start.elapsed().as_secs_f64();
    let n = n - ids.start;
    eprintln!(
        "populate m={m} n={n}: {secs:.1} s, {:.0} docs/s, {:.0} block entries/s, RSS {:.0} MB",
        n as f64 / secs,
        (n * layout.tables() as u64) as f64 / secs,
        rss_mb()
    );
    drop(blocks);
    sample
}

fn flip2(rng: &mut StdRng, fp: Fingerprint) -> Fingerprint {
    let a = rng.random_range(0..64u32);
    let mut b = rng.random_range(0..63u32);
    if b >= a {
        b += 1;
    }
    Fingerprint::new(fp.low() ^ (1 << a) ^ (1 << b))
}

fn new_signature(rng: &mut StdRng, serial: &mut u64) -> Signature {
    *serial += 1;
    Signature {
        url: format!("n{serial}"),
        url_digest: None,
        title_digest: None,
        fingerprint: Some(Fingerprint::new(rng.random())),
        sketch: Some(random_sketch(rng)),
        features: 64,
        min_similarity: None,
        article: simcrawl_dedup::Article::None,
        extent: None,
    }
}

/// A sketch of no real text: random bins, as unrelated documents have.
fn random_sketch(rng: &mut StdRng) -> Sketch {
    let mut bins = [0u16; simcrawl_dedup::sketch::SKETCH_BINS];
    for b in &mut bins {
        *b = rng.random();
    }
    Sketch::from_bins(bins, rng.random()).narrow(sketch_bits())
}

/// Times `iters` calls of `Deduper::check_batch`, each on `per_call` new
/// random signatures (all unique, so each is looked up and inserted). Runs
/// in chunks of about 10k documents; after each chunk the inserted documents
/// are removed again, untimed, so the store stays at its populated size.
fn timed_checks<S: Store>(
    d: &Deduper<S>,
    layout: &BlockLayout,
    rng: &mut StdRng,
    serial: &mut u64,
    iters: u64,
    per_call: usize,
) -> Duration {
    let calls_per_chunk = (10_000 / per_call).max(1) as u64;
    let mut total = Duration::ZERO;
    let mut done = 0u64;
    while done < iters {
        let calls = calls_per_chunk.min(iters - done);
        let batches: Vec<Vec<Signature>> = (0..calls)
            .map(|_| (0..per_call).map(|_| new_signature(rng, serial)).collect())
            .collect();
        let mut verdicts = Vec::with_capacity(batches.len());
        let (bands, rows) = (d.config().bands, d.config().band_rows);
        let start = Instant::now();
        for sigs in &batches {
            verdicts.push(
                d.check_batch(black_box(sigs), simcrawl_dedup::UrlTier::Skip)
                    .unwrap(),
            );
        }
        total += start.elapsed();
        d.store()
            .write(|t| {
                for (v, sig) in verdicts.iter().flatten().zip(batches.iter().flatten()) {
                    if let Verdict::Unique {
                        id: Some(id),
                        fingerprint: Some(fp),
                        ..
                    } = v
                    {
                        for (table, key) in layout.keys(fp.low()) {
                            t.remove_block(table, key, *fp, *id)?;
                        }
                        if let Some(sk) = &sig.sketch {
                            for key in sk.band_keys(bands, rows) {
                                t.remove_band(key, *id)?;
                            }
                        }
                        t.remove_doc(*id)?;
                    }
                }
                Ok(())
            })
            .unwrap();
        done += calls;
    }
    total
}

fn index_benches<S: Store>(c: &mut Criterion, name: &str, d: &Deduper<S>, sample: &[Fingerprint]) {
    let mut rng = StdRng::seed_from_u64(7);
    let misses: Vec<Fingerprint> = (0..QUERIES).map(|_| Fingerprint::new(rng.random())).collect();
    let hits: Vec<Fingerprint> = (0..QUERIES)
        .map(|_| {
            let fp = *sample.choose(&mut rng).unwrap();
            flip2(&mut rng, fp)
        })
        .collect();
    // Sanity: a hit query finds its document, a random one (almost never) does.
    assert!(!d.near(hits[0]).unwrap().is_empty());
    let found: usize = misses[..100].iter().map(|&q| d.near(q).unwrap().len()).sum();
    eprintln!("{name}: {found} results for 100 random queries");

    let mut g = c.benchmark_group(format!("index/{name}"));
    short(&mut g, 4);
    g.throughput(Throughput::Elements(1));
    for (label, queries) in [("near_miss", &misses), ("near_hit", &hits)] {
        let mut i = 0usize;
        g.bench_function(label, |b| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                black_box(d.near(queries[i]).unwrap())
            })
        });
    }
    let layout = BlockLayout::new(d.config().blocks, d.config().max_distance).unwrap();
    let mut serial = 0u64;
    g.bench_function("check_1", |b| {
        b.iter_custom(|iters| timed_checks(d, &layout, &mut rng, &mut serial, iters, 1))
    });
    g.throughput(Throughput::Elements(CHECK_BATCH as u64));
    g.bench_function(format!("check_batch_{CHECK_BATCH}"), |b| {
        b.iter_custom(|iters| timed_checks(d, &layout, &mut rng, &mut serial, iters, CHECK_BATCH))
    });
    g.finish();
    d.flush().unwrap();
    eprintln!(
        "{name}: {serial} documents checked (and removed again) by the insert benches; {} stored",
        d.stats().unwrap().documents
    );
}

fn index(c: &mut Criterion) {
    let sizes: Vec<u64> = env_list("DEDUP_BENCH_SIZES", "1000000")
        .iter()
        .map(|s| {
            s.replace('_', "")
                .parse()
                .expect("DEDUP_BENCH_SIZES: comma separated numbers")
        })
        .collect();
    let configs = env_list("DEDUP_BENCH_CONFIGS", "mem4,mem6,redb4,redb6");
    let dir_base = std::env::var_os("DEDUP_BENCH_DIR").map_or_else(std::env::temp_dir, Into::into);
    for &n in &sizes {
        for cfg in &configs {
            let (kind, m) = match cfg.as_str() {
                "redis4" => ("redis", 4),
                "redis6" => ("redis", 6),
                "replica4" => ("replica", 4),
                "mem4" => ("mem", 4),
                "mem6" => ("mem", 6),
                "redb4" => ("redb", 4),
                "redb6" => ("redb", 6),
                "sled4" => ("sled", 4),
                other => panic!("unknown DEDUP_BENCH_CONFIGS entry {other:?}"),
            };
            let name = format!("{kind}_m{m}_{}", human(n));
            eprintln!("building {name} (RSS before {:.0} MB)", rss_mb());
            if kind == "mem" {
                let d = Deduper::new(MemoryStore::new(), config(m)).unwrap();
                let sample = populate(&d, m, n, n ^ u64::from(m));
                index_benches(c, &name, &d, &sample);
            } else if kind == "sled" {
                sled_bench(c, &name, &dir_base, m, n);
            } else if kind == "redis" {
                redis_bench(c, &name, m, n);
            } else if kind == "replica" {
                replica_bench(&name, m, n);
            } else {
                let dir = tempfile::Builder::new()
                    .prefix("dedup-bench-")
                    .tempdir_in(&dir_base)
                    .unwrap();
                let path = dir.path().join("index.redb");
                let cache_mb: usize = std::env::var("DEDUP_BENCH_REDB_CACHE_MB")
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(64);
                let options = RedbOptions {
                    sync_interval: Duration::from_secs(3600),
                    cache_bytes: cache_mb << 20,
                };
                let store = RedbStore::open_opts(&path, options).unwrap();
                let d = Deduper::new(store, config(m)).unwrap();
                let sample = populate(&d, m, n, n ^ u64::from(m));
                let size = std::fs::metadata(&path).map_or(0, |m| m.len());
                eprintln!("{name}: file {:.0} MB", size as f64 / 1e6);
                index_benches(c, &name, &d, &sample);
            }
            eprintln!("dropped {name} (RSS after {:.0} MB)", rss_mb());
        }
    }
}

criterion_group!(benches, fingerprint_benches, index);
criterion_main!(benches);

#[cfg(feature = "sled")]
fn sled_bench(c: &mut Criterion, name: &str, dir_base: &std::path::Path, m: u32, n: u64) {
    let dir = tempfile::Builder::new()
        .prefix("dedup-bench-")
        .tempdir_in(dir_base)
        .unwrap();
    let d = Deduper::new(
        simcrawl_dedup::SledStore::open(dir.path().join("index.sled")).unwrap(),
        config(m),
    )
    .unwrap();
    let sample = populate(&d, m, n, n ^ u64::from(m));
    index_benches(c, name, &d, &sample);
}

#[cfg(not(feature = "sled"))]
fn sled_bench(_: &mut Criterion, name: &str, _: &std::path::Path, _: u32, _: u64) {
    eprintln!("{name}: skipped, build the bench with --features sled");
}

/// The Redis store on `SIMCRAWL_REDIS_URL` (namespace `bench`, emptied
/// first and after): populated 10k documents per transaction, Redis
/// memory per document printed (`INFO memory` used_memory delta).
#[cfg(feature = "redis")]
fn redis_bench(c: &mut Criterion, name: &str, m: u32, n: u64) {
    let Ok(url) = std::env::var("SIMCRAWL_REDIS_URL") else {
        eprintln!("{name}: skipped, set SIMCRAWL_REDIS_URL (scripts/redis-test-server.sh start)");
        return;
    };
    let options = simcrawl_dedup::RedisOptions {
        namespace: "bench".into(),
        ..Default::default()
    };
    let store = simcrawl_dedup::RedisStore::open_with(&url, options).unwrap();
    store.clear().unwrap();
    let before = store.used_memory().unwrap();
    let d = Deduper::new(store, config(m)).unwrap();
    // In two halves: the second half's growth is the marginal cost of a
    // document, without the keys every namespace has from the start.
    let half = n / 2;
    let mut sample = populate_in(&d, m, 0..half, n ^ u64::from(m), 10_000);
    let middle = d.store().used_memory().unwrap();
    sample.extend(populate_in(&d, m, half..n, n ^ u64::from(m) ^ 1, 10_000));
    let after = d.store().used_memory().unwrap();
    eprintln!(
        "{name}: Redis used_memory +{:.1} MB, {:.0} bytes per document; second half {:.0} bytes per document (bands {})",
        (after - before) as f64 / 1e6,
        (after - before) as f64 / n as f64,
        (after - middle) as f64 / (n - half) as f64,
        d.config().bands
    );
    print_parts(name, d.store(), n);
    redis_tier_memory(name, &url, n.min(100_000));
    redis_throughput(name, &d, m, d.store());
    let trips = d.store().round_trips();
    index_benches(c, name, &d, &sample);
    eprintln!(
        "{name}: {} round trips, {} conflicts during the benches",
        d.store().round_trips() - trips,
        d.store().conflicts()
    );
    d.store().clear().unwrap();
}

/// `RedisStore::memory_by_part` of `store`, per document of `n`.
#[cfg(feature = "redis")]
fn print_parts(name: &str, store: &simcrawl_dedup::RedisStore, n: u64) {
    let parts = store.memory_by_part().unwrap();
    let total: u64 = parts.iter().map(|p| p.bytes).sum();
    for p in &parts {
        eprintln!(
            "{name}: part {:<12} {:>9} keys {:>8.1} MB {:>7.1} bytes per document",
            p.part,
            p.keys,
            p.bytes as f64 / 1e6,
            p.bytes as f64 / n as f64
        );
    }
    eprintln!(
        "{name}: parts total {:.1} MB, {:.1} bytes per document (MEMORY USAGE)",
        total as f64 / 1e6,
        total as f64 / n as f64
    );
}

/// Redis memory of the URL and title tiers, which the index bench leaves
/// out: `n` URL records (URLs of 60-70 bytes) and `n` distinct titles,
/// written directly through `Store::write` in namespace `bench-tiers`.
#[cfg(feature = "redis")]
fn redis_tier_memory(name: &str, url: &str, n: u64) {
    let options = simcrawl_dedup::RedisOptions {
        namespace: "bench-tiers".into(),
        ..Default::default()
    };
    let store = simcrawl_dedup::RedisStore::open_with(url, options).unwrap();
    store.clear().unwrap();
    let before = store.used_memory().unwrap();
    let mut rng = StdRng::seed_from_u64(5);
    let mut i = 0u64;
    while i < n {
        let end = (i + 10_000).min(n);
        store
            .write(|t| {
                for id in i..end {
                    let u = format!(
                        "https://news.example-site.com/2024/05/{:02}/article-{id:08}.html",
                        id % 28
                    );
                    t.put_url(
                        rng.random(),
                        &simcrawl_dedup::store::UrlRecord {
                            first_seen: 1_700_000_000 + id,
                            url: u,
                        },
                    )?;
                    t.add_title(rng.random(), id)?;
                }
                Ok(())
            })
            .unwrap();
        i = end;
    }
    let after = store.used_memory().unwrap();
    eprintln!(
        "{name}: URL + title tiers of {n} documents: used_memory +{:.1} MB, {:.0} bytes per document",
        (after - before) as f64 / 1e6,
        (after - before) as f64 / n as f64
    );
    print_parts(&format!("{name} tiers"), &store, n);
    store.clear().unwrap();
}

/// checks/s of `check_batch` at several batch sizes (new random
/// documents, all inserted, then removed again untimed), with the CPU the
/// Redis server and this process spent per check: on a shared machine the
/// CPU figures say what a dedicated core would do.
#[cfg(feature = "redis")]
fn redis_throughput<S: Store>(name: &str, d: &Deduper<S>, m: u32, probe: &simcrawl_dedup::RedisStore) {
    let layout = BlockLayout::new(m, 3).unwrap();
    let mut rng = StdRng::seed_from_u64(99);
    let mut serial = 1u64 << 40;
    let server_cpu = || {
        probe.info_number("cpu", "used_cpu_user").unwrap() + probe.info_number("cpu", "used_cpu_sys").unwrap()
    };
    let own_cpu = || {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        let f: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
        let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        (ticks(11) + ticks(12)) / 100.0
    };
    for per_call in [1usize, 10, 100, 1000] {
        let docs = if per_call == 1 { 2_000 } else { 20_000 };
        let mut walls = Vec::new();
        let (s0, c0) = (server_cpu(), own_cpu());
        for _ in 0..3 {
            walls.push(
                timed_checks(
                    d,
                    &layout,
                    &mut rng,
                    &mut serial,
                    (docs / per_call) as u64,
                    per_call,
                )
                .as_secs_f64(),
            );
        }
        let (s1, c1) = (server_cpu(), own_cpu());
        walls.sort_by(f64::total_cmp);
        let n = 3.0 * docs as f64;
        eprintln!(
            "{name}: check_batch of {per_call}: {:.0} checks/s (median of 3 x {docs}); server CPU {:.1} us/check, client CPU {:.1} us/check (incl. the untimed removals)",
            docs as f64 / walls[1],
            (s1 - s0) * 1e6 / n,
            (c1 - c0) * 1e6 / n,
        );
    }
}

#[cfg(not(feature = "redis"))]
fn redis_bench(_: &mut Criterion, name: &str, _: u32, _: u64) {
    eprintln!("{name}: skipped, build the bench with --features redis");
}

/// The replicated store on `SIMCRAWL_REDIS_URL` (namespace `bench-rep`,
/// emptied first and after): populated 10k documents per transaction,
/// Redis memory per document (`INFO memory` delta, and the namespace's
/// keys after a forced snapshot), the time a second process takes to
/// load the state, and checks/s as for the Redis store.
#[cfg(feature = "redis")]
fn replica_bench(name: &str, m: u32, n: u64) {
    let Ok(url) = std::env::var("SIMCRAWL_REDIS_URL") else {
        eprintln!("{name}: skipped, set SIMCRAWL_REDIS_URL (scripts/redis-test-server.sh start)");
        return;
    };
    let options = |ns: &str| simcrawl_dedup::RedisOptions {
        namespace: ns.into(),
        ..Default::default()
    };
    let probe = simcrawl_dedup::RedisStore::open_with(&url, options("bench-probe")).unwrap();
    let store = simcrawl_dedup::ReplicatedStore::open_with(&url, options("bench-rep")).unwrap();
    store.clear().unwrap();
    let before = store.used_memory().unwrap();
    let d = Deduper::new(store, config(m)).unwrap();
    let rss0 = rss_mb();
    populate_in(&d, m, 0..n, n ^ u64::from(m), 10_000);
    let after = d.store().used_memory().unwrap();
    eprintln!(
        "{name}: Redis used_memory +{:.1} MB, {:.0} bytes per document (log position {}); process RSS +{:.0} MB ({:.0} bytes per document)",
        (after - before) as f64 / 1e6,
        (after - before) as f64 / n as f64,
        d.store().position(),
        rss_mb() - rss0,
        (rss_mb() - rss0) * 1e6 / n as f64,
    );
    let keys = d.store().memory().unwrap();
    eprintln!(
        "{name}: namespace keys {:.1} MB, {:.0} bytes per document",
        keys as f64 / 1e6,
        keys as f64 / n as f64
    );
    d.store().finish_snapshot().unwrap();
    let start = Instant::now();
    // The checks are timed on this second replica, which writes no
    // snapshot: a snapshot's upload (a few seconds at 1M, in a thread of
    // its own) would land in some passes and not others.
    let other = simcrawl_dedup::ReplicatedStore::open_with(&url, options("bench-rep"))
        .unwrap()
        .compact_after(u64::MAX);
    eprintln!(
        "{name}: a second process loads the state in {:.1} s (position {})",
        start.elapsed().as_secs_f64(),
        other.position()
    );
    // The writer too, for comparison: its state was built by the checks,
    // the second one's by loading the snapshot.
    d.store().set_compact_after(u64::MAX);
    redis_throughput(&format!("{name} (writer)"), &d, m, &probe);
    drop(d);
    let d = Deduper::new(other, config(m)).unwrap();
    redis_throughput(name, &d, m, &probe);
    eprintln!(
        "{name}: {} round trips, {} conflicts",
        d.store().round_trips(),
        d.store().conflicts()
    );
    d.store().clear().unwrap();
    drop(d);
    // The ceiling: the same checks on a memory store of the same
    // documents, no Redis (its server CPU column is the idle server's).
    let mem = Deduper::new(MemoryStore::new(), config(m)).unwrap();
    populate_in(&mem, m, 0..n, n ^ u64::from(m), 10_000);
    redis_throughput(&format!("{name} (memory store, no Redis)"), &mem, m, &probe);
}

#[cfg(not(feature = "redis"))]
fn replica_bench(name: &str, _: u32, _: u64) {
    eprintln!("{name}: skipped, build the bench with --features redis");
}
