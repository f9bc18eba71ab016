//! One news article in simplified and in traditional characters (the same
//! text: the crawler's t2s conversion maps the second onto the first).

pub const TITLE_SIMPLIFIED: &str = "本市启动老旧小区改造三年行动计划";
pub const TITLE_TRADITIONAL: &str = "本市啟動老舊小區改造三年行動計劃";

pub const SIMPLIFIED: &str = "\
<p>本报讯 记者从市住房和城乡建设局获悉，本市近日正式发布老旧小区改造三年行动计划，计划到二〇二七年底前完成全市三百二十个老旧小区的综合改造，涉及居民约十二万户。根据计划，改造内容分为基础类、完善类和提升类三个层次。基础类改造主要包括供水、排水、供电、燃气等管线的更新，以及屋面防水和外墙保温；完善类改造重点是加装电梯、增设停车位和建设无障碍设施；提升类改造则着眼于社区养老、托育和便民服务设施的配套建设。</p>
<p>市住房和城乡建设局有关负责人表示，改造工作将坚持“居民自愿、先民生后提升”的原则，每个项目在开工前都要征求居民意见，改造方案须经三分之二以上业主同意后方可实施。为解决资金问题，本市将统筹中央补助资金、地方财政资金和社会资本，并鼓励居民通过使用住宅专项维修资金等方式合理分担改造费用。</p>
<p>据了解，去年本市已试点改造四十六个小区，共加装电梯一百八十部，新增停车位两千余个，居民满意度达到百分之九十以上。家住东城区幸福里小区的王女士说，以前每次下雨楼道都会漏水，改造后不仅房子不漏了，楼下还建起了健身广场和老年活动中心，生活方便了很多。</p>
<p>下一步，各区将建立项目台账，实行挂图作战，确保改造工程质量和施工安全，同时加强对施工单位的监督管理，对群众反映的问题及时整改。</p>";

pub const TRADITIONAL: &str = "\
<p>本報訊 記者從市住房和城鄉建設局獲悉，本市近日正式發布老舊小區改造三年行動計劃，計劃到二〇二七年底前完成全市三百二十個老舊小區的綜合改造，涉及居民約十二萬戶。根據計劃，改造內容分為基礎類、完善類和提升類三個層次。基礎類改造主要包括供水、排水、供電、燃氣等管線的更新，以及屋面防水和外牆保溫；完善類改造重點是加裝電梯、增設停車位和建設無障礙設施；提升類改造則著眼於社區養老、托育和便民服務設施的配套建設。</p>
<p>市住房和城鄉建設局有關負責人表示，改造工作將堅持「居民自願、先民生後提升」的原則，每個項目在開工前都要徵求居民意見，改造方案須經三分之二以上業主同意後方可實施。為解決資金問題，本市將統籌中央補助資金、地方財政資金和社會資本，並鼓勵居民通過使用住宅專項維修資金等方式合理分擔改造費用。</p>
<p>據了解，去年本市已試點改造四十六個小區，共加裝電梯一百八十部，新增停車位兩千餘個，居民滿意度達到百分之九十以上。家住東城區幸福里小區的王女士說，以前每次下雨樓道都會漏水，改造後不僅房子不漏了，樓下還建起了健身廣場和老年活動中心，生活方便了很多。</p>
<p>下一步，各區將建立項目台賬，實行掛圖作戰，確保改造工程質量和施工安全，同時加強對施工單位的監督管理，對群眾反映的問題及時整改。</p>";

/// The usual template of the fixture site, Chinese edition.
pub fn standard_page(title: &str, article: &str, links: &[String]) -> String {
    let mut nav = String::new();
    for l in links {
        nav.push_str(&format!("<li><a href=\"{l}\">相关链接</a></li>"));
    }
    format!(
        "<!doctype html><html lang=\"zh\"><head><meta charset=\"utf-8\"><title>{title}</title></head>\
         <body><header><nav><ul><li><a href=\"/\">首页</a></li>{nav}</ul></nav></header>\
         <article><h1>{title}</h1>{article}</article>\
         <footer>本站所有内容版权所有，未经许可不得转载。</footer></body></html>"
    )
}

/// The same article inside a completely different site template (another
/// `<title>` suffix, top bar, sidebar, byline and footer). The headline sits
/// inside the story container, as on most news sites: with the headline
/// outside it the extracted text lacks the title words and the distance to
/// the standard page is 8 (checked with `crawl distance --html`).
pub fn retemplated_page(title: &str, article: &str) -> String {
    format!(
        "<!DOCTYPE html><html><head><meta http-equiv=\"Content-Type\" content=\"text/html; charset=utf-8\">\
         <title>{title}_城市晚报网</title></head><body>\
         <div id=\"top-bar\"><span>城市晚报网</span> | <a>登录</a> | <a>注册</a></div>\
         <div class=\"layout\"><aside class=\"sidebar\"><h3>热门排行</h3><ol>\
         <li>地铁五号线明日起延长运营时间</li><li>周末全市气温将明显回升</li><li>第十届读书节开幕</li></ol></aside>\
         <main><div class=\"story\"><div class=\"story-body\"><h2 class=\"headline\">{title}</h2>\
         <div class=\"byline\">来源：城市晚报 编辑：李明</div>\
         {article}</div></div></main></div>\
         <div id=\"bottom\"><p>城市晚报网 主办 联系电话 12345678</p><p>京ICP备00000000号</p></div>\
         </body></html>"
    )
}
