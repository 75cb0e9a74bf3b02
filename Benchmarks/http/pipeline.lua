-- wrk script: 16 requests written at once on each connection (HTTP/1.1 pipelining).
init = function(args)
   local r = {}
   for i = 1, 16 do r[i] = wrk.format("GET", "/") end
   req = table.concat(r)
end
request = function() return req end
