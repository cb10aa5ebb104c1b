// Every Files API route on a real HTTP server on loopback over a real Workspace: upload (overwrite),
// download with Range, HEAD, delete, directories (list with paging, create, delete, HEAD), Databricks'
// status codes and error bodies, node-token rules, and an upload cut off mid-body.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <httplib.h>

#include "server/http/server.h"
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "server/api/files.h"
#include "server/workspace/workspace.h"
#include "tests/server/recording_backend.h"

namespace fs = std::filesystem;
using namespace air::server;
using nlohmann::json;

namespace {

struct Served {
  std::string home;
  std::vector<NodeLaunch> started;
  std::unique_ptr<Workspace> ws;
  http::Server srv;  // the workspace's own server core (server/http/server.h)
  std::thread thread;
  int port = 0;
  std::string admin;

  Served() {
    char t[] = "/tmp/air-files-test-XXXXXX";
    home = ::mkdtemp(t);
    WorkspaceOptions o;
    o.home = home;
    o.ticker = false;
    ws = std::make_unique<Workspace>(o, std::make_unique<RecordingBackend>(started));
    ws->set_url("http://127.0.0.1:1");
    ws->start();
    admin = ws->auth().create_admin_token();
    Lifecycle& lifecycle = ws->lifecycle();
    install_files_routes(srv, ws->auth(), ws->volume_access(),
                         [&lifecycle](const std::string& run, int attempt) { return lifecycle.node_spec(run, attempt, 0); });
    port = srv.bind("127.0.0.1", 0);
    REQUIRE(port > 0);
    thread = std::thread([this] { srv.listen(); });
  }
  ~Served() {
    srv.stop();
    thread.join();
    ws.reset();
    fs::remove_all(home);
  }
  httplib::Client client(const std::string& token) {
    httplib::Client c("127.0.0.1", port);
    c.set_bearer_token_auth(token);
    return c;
  }
  std::string node_token(const std::string& command) {
    air::api::SubmitRequest req;
    req.workload_yaml = "experiment_name: t\ncompute:\n  accelerator_type: CPU_1xHOST\n  num_accelerators: 1\ncommand: " +
                        command + "\n";
    req.file_name = "t.yaml";
    ws->runs().submit(req);
    return started.back().token;
  }
};

json error_of(const httplib::Result& r) { return json::parse(r->body); }

}  // namespace

TEST_CASE("files api: upload, metadata, download with Range, overwrite rules, delete") {
  Served s;
  auto c = s.client(s.admin);
  const std::string f = "/api/2.0/fs/files/Volumes/main/default/ckpt/dir/a%20b.bin";
  auto put = c.Put(f.c_str(), "0123456789", "application/octet-stream");
  REQUIRE(put);
  CHECK(put->status == 204);
  CHECK(put->body.empty());
  std::ifstream disk(s.home + "/volumes/main/default/ckpt/dir/a b.bin");
  CHECK(std::string(std::istreambuf_iterator<char>(disk), {}) == "0123456789");

  auto head = c.Head(f.c_str());
  CHECK(head->status == 200);
  CHECK(head->get_header_value("Content-Length") == "10");
  CHECK(head->get_header_value("Content-Type") == "application/octet-stream");
  CHECK(head->get_header_value("Last-Modified").find(" GMT") != std::string::npos);

  auto get = c.Get(f.c_str());
  CHECK(get->status == 200);
  CHECK(get->body == "0123456789");
  auto part = c.Get(f.c_str(), {{"Range", "bytes=2-5"}});
  CHECK(part->status == 206);
  CHECK(part->body == "2345");
  CHECK(part->get_header_value("Content-Range") == "bytes 2-5/10");
  CHECK(c.Get(f.c_str(), {{"Range", "bytes=7-"}})->body == "789");
  CHECK(c.Get(f.c_str(), {{"Range", "bytes=-3"}})->body == "789");
  auto bad = c.Get(f.c_str(), {{"Range", "bytes=10-"}});
  CHECK(bad->status == 416);
  CHECK(bad->get_header_value("Content-Range") == "bytes */10");

  auto again = c.Put((f + "?overwrite=false").c_str(), "x", "application/octet-stream");
  CHECK(again->status == 409);
  CHECK(error_of(again) == json{{"error_code", "ALREADY_EXISTS"},
                                {"message", "/Volumes/main/default/ckpt/dir/a b.bin already exists (upload with overwrite=true)"}});
  CHECK(c.Put(f.c_str(), "new", "application/octet-stream")->status == 204);  // overwrite defaults to true
  CHECK(c.Get(f.c_str())->body == "new");

  CHECK(c.Delete(f.c_str())->status == 204);
  auto gone = c.Get(f.c_str());
  CHECK(gone->status == 404);
  CHECK(error_of(gone)["error_code"] == "NOT_FOUND");
  CHECK(c.Head(f.c_str())->status == 404);
  CHECK(c.Delete(f.c_str())->status == 404);
}

TEST_CASE("files api: directories are created, listed in pages, checked and deleted only when empty") {
  Served s;
  auto c = s.client(s.admin);
  const std::string d = "/api/2.0/fs/directories/Volumes/main/default/data/set";
  CHECK(c.Head(d.c_str())->status == 404);
  CHECK(c.Put(d.c_str(), "", "application/json")->status == 204);
  CHECK(c.Put(d.c_str(), "", "application/json")->status == 204);  // idempotent
  CHECK(c.Head(d.c_str())->status == 200);
  for (int i = 0; i < 5; ++i)
    c.Put(("/api/2.0/fs/files/Volumes/main/default/data/set/f" + std::to_string(i)).c_str(), "abc", "text/plain");
  CHECK(c.Put((d + "/sub").c_str(), "", "application/json")->status == 204);

  std::vector<std::string> paths;
  std::string token;
  int pages = 0;
  do {
    auto r = c.Get((d + "?page_size=2" + (token.empty() ? "" : "&page_token=" + token)).c_str());
    REQUIRE(r->status == 200);
    auto j = json::parse(r->body);
    for (const auto& e : j["contents"]) paths.push_back(e["path"].get<std::string>());
    if (pages == 0) {
      CHECK(j["contents"][0]["name"] == "f0");
      CHECK(j["contents"][0]["is_directory"] == false);
      CHECK(j["contents"][0]["file_size"] == 3);
      CHECK(j["contents"][0]["last_modified"].get<int64_t>() > 0);
    }
    token = j.value("next_page_token", "");
    ++pages;
  } while (!token.empty());
  CHECK(pages == 3);
  CHECK(paths.back() == "/Volumes/main/default/data/set/sub/");
  CHECK(paths.size() == 6);

  auto busy = c.Delete(d.c_str());
  CHECK(busy->status == 409);
  CHECK(error_of(busy)["error_code"] == "DIRECTORY_NOT_EMPTY");
  CHECK(c.Delete((d + "/sub").c_str())->status == 204);
  auto missing = c.Get("/api/2.0/fs/directories/Volumes/main/default/nothing");
  CHECK(missing->status == 404);
  auto escape = c.Get("/api/2.0/fs/directories/Volumes/main/default/data/../../x");
  CHECK(escape->status == 400);
  CHECK(error_of(escape)["error_code"] == "INVALID_PARAMETER_VALUE");
}

TEST_CASE("files api: tokens: none is refused, a node token reaches only the volumes its workload names") {
  Served s;
  CHECK(s.client("wrong").Get("/api/2.0/fs/directories/Volumes")->status == 401);
  auto node = s.client(s.node_token("air-train --set output_dir=/Volumes/main/default/ckpt/tiny"));
  CHECK(node.Put("/api/2.0/fs/files/Volumes/main/default/ckpt/tiny/x", "1", "text/plain")->status == 204);
  CHECK(node.Get("/api/2.0/fs/files/Volumes/main/default/ckpt/tiny/x")->body == "1");
  auto other = node.Put("/api/2.0/fs/files/Volumes/main/default/other/x", "1", "text/plain");
  CHECK(other->status == 403);
  CHECK(error_of(other) ==
        json{{"error_code", "PERMISSION_DENIED"},
             {"message", "this node token may write only the volumes its workload names; /Volumes/main/default/other "
                         "is not one of them"}});
  CHECK(node.Get("/api/2.0/fs/directories/Volumes")->status == 403);
}

TEST_CASE("files api: an upload cut off mid-body leaves no file under its name and no temporary file") {
  Served s;
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(s.port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  std::string head = "PUT /api/2.0/fs/files/Volumes/main/default/ckpt/big.bin HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                     s.admin + "\r\nContent-Length: 10000000\r\n\r\n";
  std::string body(1 << 20, 'x');
  REQUIRE(::write(fd, head.data(), head.size()) == static_cast<ssize_t>(head.size()));
  REQUIRE(::write(fd, body.data(), body.size()) > 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ::close(fd);  // the client dies mid-upload
  std::string dir = s.home + "/volumes/main/default/ckpt";
  for (int i = 0; i < 100 && fs::exists(dir) && !fs::is_empty(dir); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK_FALSE(fs::exists(dir + "/big.bin"));
  CHECK((!fs::exists(dir) || fs::is_empty(dir)));
}
