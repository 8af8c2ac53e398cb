#include <boost/test/unit_test.hpp>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include <caf/config_value.hpp>

#include "stoker/errors.hpp"
#include "stoker/registry.hpp"
#include "config/option_table.hpp"
#include "config/run_config.hpp"
#include "node/node_config.hpp"
#include "node/prepare_run.hpp"

using namespace stoker;

namespace {

struct doc_row {
  std::string default_text;
  std::string scope;
  int count = 0;
};

// The key table of docs/configuration.md: key -> default and scope.
std::map<std::string, doc_row> documented_keys() {
  std::ifstream in{std::string{STOKER_SOURCE_DIR}
                   + "/docs/configuration.md"};
  BOOST_REQUIRE(in);
  std::map<std::string, doc_row> rows;
  std::regex row{R"(^\| `([a-z.-]+)` \| `([^`]*)` \| (node|pipeline) \|)"};
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, row)) {
      auto& r = rows[m[1]];
      r.default_text = m[2];
      r.scope = m[3];
      ++r.count;
    }
  }
  return rows;
}

// Defaults computed at run time, or no value at all.
bool literal_default(const option_decl& d) {
  for (auto x : {"none", "ROLE-PID", "the hostname",
                 "the transforms without augmentation"})
    if (d.default_text == x)
      return false;
  return true;
}

} // namespace

BOOST_AUTO_TEST_SUITE(option_table)

BOOST_AUTO_TEST_CASE(docs_key_table_agrees_with_the_declarations) {
  auto docs = documented_keys();
  BOOST_TEST(docs.size() > 60u);
  for (auto& d : stoker::option_table()) {
    auto i = docs.find(d.name);
    BOOST_TEST_CONTEXT(d.name) {
      BOOST_REQUIRE_MESSAGE(i != docs.end(),
                            "docs/configuration.md has no row for `"
                              << d.name << "`");
      BOOST_TEST(i->second.count == 1);
      BOOST_TEST(i->second.default_text == d.default_text);
      BOOST_TEST(i->second.scope
                 == (d.scope == option_scope::node ? "node" : "pipeline"));
    }
  }
  for (auto& [key, row] : docs)
    BOOST_TEST(find_option(key) != nullptr,
               "docs/configuration.md names `" << key
                                               << "`, which is not declared");
}

BOOST_AUTO_TEST_CASE(every_key_takes_its_own_default) {
  for (auto& d : stoker::option_table()) {
    if (!literal_default(d))
      continue;
    BOOST_TEST_CONTEXT(d.name << " = " << d.default_text) {
      auto value = caf::config_value::parse(d.default_text);
      BOOST_REQUIRE(value);
      run_config cfg;
      auto err = d.read(*value, cfg);
      BOOST_TEST(!err, describe(err));
    }
  }
}

BOOST_AUTO_TEST_CASE(long_help_lists_every_key_with_its_values_and_default) {
  node_config cfg;
  auto help = cfg.options().help_text(false);
  for (auto& d : stoker::option_table())
    BOOST_TEST(help.find(d.description()) != std::string::npos, d.name);
  std::regex line{R"(--pipeline\.batch-size=<int64> +: samples per batch )"
                  R"(\[1\.\.65536; default 64\])"};
  BOOST_TEST(std::regex_search(help, line));
}

BOOST_AUTO_TEST_CASE(reading_checks_values_and_prepare_run_checks_names) {
  caf::settings content;
  caf::put(content, "pipeline.source", std::string{"no-such-source"});
  caf::put(content, "trainer.device", std::string{"sim"});
  // The reader parses the entry; it does not know what is registered.
  auto cfg = read_run_config(content);
  BOOST_REQUIRE(cfg);
  BOOST_TEST(cfg->pipeline.data.source.name == "no-such-source");
  BOOST_TEST(cfg->node.name.empty()); // completed by prepare_run
  auto err = prepare_run(*cfg, builtin_registry());
  BOOST_TEST(describe(err).find("unknown source 'no-such-source'; expected "
                                "synthetic, idx, image-folder or tar-shards")
               != std::string::npos,
             describe(err));
  // A good one is completed: this node's name, host and workers, the plan.
  caf::put(content, "pipeline.source", std::string{"synthetic"});
  cfg = read_run_config(content);
  BOOST_REQUIRE(cfg);
  BOOST_REQUIRE(!prepare_run(*cfg, builtin_registry()));
  BOOST_TEST(cfg->node.name.rfind("local-", 0) == 0u);
  BOOST_TEST(!cfg->node.host.empty());
  BOOST_TEST(cfg->node.workers >= 1u);
  BOOST_TEST((cfg->pipeline.kind == pipeline_kind::fused_blur));
  BOOST_TEST(cfg->pipeline.data.output.height == 224u);
}

BOOST_AUTO_TEST_SUITE_END()
